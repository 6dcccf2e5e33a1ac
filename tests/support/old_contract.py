"""An operator written for the old column-batch contract (`EventColumns`), which must be
refused at load with what to change."""


def old_vectorized(batch: "EventColumns"):  # noqa: F821
    return batch.emit(batch.payloads)
