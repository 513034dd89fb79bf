//! Pacing (being built).
