//! `.code-intel/config.json`: per-project settings with documented defaults.
