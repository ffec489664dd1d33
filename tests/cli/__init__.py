"""toolkit.cli and toolkit.commands: exit codes, messages, --json, start-up."""
