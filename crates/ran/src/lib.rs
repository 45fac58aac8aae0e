//! gNB/UE radio access stack (issue 3).
