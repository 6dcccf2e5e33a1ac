"""The Spark runtime: one Structured Streaming query per operator over the durable queues."""
