"""How a driver's failed start is read (runtime/spark/driver.py): Spark stopping the context
while it starts (a standalone master that gave the driver up) is told apart from other errors,
whichever of the three moments of the start it hit."""

from elastream.runtime.spark.driver import stopped_while_starting

# the session's constructor on a stopped context (SparkContext.assertNotStopped's error), and
# the context's own start a moment earlier and at its end (the post-start hook of a scheduler
# already stopped), as CI runs of
# tests/spark/test_cluster.py::test_a_driver_without_the_secret_is_refused_with_one_line raised them
STOPPED_IN_SESSION = (
    ": java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.\n"
)
STOPPED_IN_CONTEXT = (
    "An error occurred while calling z:org.apache.spark.SparkFiles.getRootDirectory.\n"
    ': java.lang.NullPointerException: Cannot invoke "org.apache.spark.SparkEnv.driverTmpDir()" '
    'because the return value of "org.apache.spark.SparkEnv$.get()" is null\n'
)
STOPPED_AT_HOOK = (
    "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
    ': java.lang.NullPointerException: Cannot invoke "org.apache.spark.scheduler.TaskScheduler.'
    'postStartHook()" because the return value of "org.apache.spark.SparkContext._taskScheduler()"'
    " is null\n"
)
OTHER = (
    "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
    ': java.lang.NullPointerException: Cannot invoke "String.length()" because "s" is null\n'
)


def test_a_context_stopped_in_either_moment_of_the_start_is_recognised():
    assert stopped_while_starting(STOPPED_IN_SESSION)
    assert stopped_while_starting(STOPPED_IN_CONTEXT)
    assert stopped_while_starting(STOPPED_AT_HOOK)


def test_another_error_of_the_start_is_not_taken_for_it():
    assert not stopped_while_starting(OTHER)
    assert not stopped_while_starting("java.net.BindException: Address already in use")
