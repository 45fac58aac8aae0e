//! Congestion controls behind one trait; `REGISTRY` maps names to constructors.
