//! Captures, metrics and plots (being built).
