//! The packet buffers the proxy core reads and writes payload through (`PayloadPool`): one
//! slot per packet handed in or made during a call, all recycled when the call's outputs
//! have been serialised. The steady state allocates nothing.

use millinet_proxy::PayloadPool;
use millinet_wire::PayloadId;

#[derive(Default)]
pub struct Buffers {
    slots: Vec<Vec<u8>>,
    /// Slots in use in this call.
    used: usize,
}

impl Buffers {
    /// A slot holding a copy of `bytes` (an input packet's payload).
    pub fn hold(&mut self, bytes: &[u8]) -> PayloadId {
        let (id, slot) = self.alloc(bytes.len());
        slot.copy_from_slice(bytes);
        id
    }

    /// Every slot is free again: the outputs that named them have been written out.
    pub fn recycle(&mut self) {
        self.used = 0;
    }
}

impl PayloadPool for Buffers {
    fn bytes(&self, id: PayloadId) -> &[u8] {
        match id.is_none() {
            true => &[],
            false => &self.slots[id.0 as usize],
        }
    }

    fn alloc(&mut self, len: usize) -> (PayloadId, &mut [u8]) {
        if self.used == self.slots.len() {
            self.slots.push(Vec::new());
        }
        let id = self.used;
        self.used += 1;
        let slot = &mut self.slots[id];
        slot.clear();
        slot.resize(len, 0);
        (PayloadId(id as u32), slot)
    }
}
