"""Caladrius (Kalim et al.): a seeded synthetic history with known truths (Fig. 1 topology)."""
