//! The virtual-time network simulator (being built).
