// channel crate: filled by issue 3
