//! Congestion controllers (being built).
