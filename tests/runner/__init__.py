"""toolkit.runner: attempts, campaigns, engines, tasks, instruments, the pre-flight."""
