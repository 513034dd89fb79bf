//! Streams (being built).
