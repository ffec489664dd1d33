"""toolkit.report and toolkit.reporting: Summary, Decision, report.md, charts, exports."""
