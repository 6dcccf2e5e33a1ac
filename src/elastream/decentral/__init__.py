"""Decentralized scaling (Belkhiria & Tedeschi, seed 003): local decisions and a FIFO protocol."""
