//! milliProxy core and the split-TCP proxy (issue 5).
