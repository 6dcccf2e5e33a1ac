"""Where pipelines run: the durable queues, the Spark runtime and the simulator."""
