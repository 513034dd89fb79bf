//! ECN validation (being built).
