"""elastream: keep each operator of a streaming pipeline at the right number of replicas, live."""
