//! Typed identities of the network's parts: an index that cannot be mistaken for another
//! kind's, and no sentinel values (what may be absent is an `Option`).

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// A node: scenario node i is `NodeId(i)`.
    NodeId
);
id!(
    /// A network interface (an address) of a node.
    InterfaceId
);
id!(
    /// One direction of a wired link: scenario link i is `LinkId(2i)` from `a` to `b` and
    /// `LinkId(2i + 1)` back; X2 links made at handovers follow.
    LinkId
);
id!(
    /// A middlebox site: a node whose crossing TCP packets go to its driver's middlebox.
    SiteId
);
