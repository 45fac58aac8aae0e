//! Delivery-rate sampling per draft-cheng-iccrg-delivery-rate-estimation-02: every
//! transmission snapshots the connection's delivery counters; when a segment is delivered
//! (cumulatively or selectively acknowledged for the first time) the snapshot of the most
//! recently sent delivered segment yields the rate sample of that ACK.

use crate::cc::RateSample;

/// Per-transmission snapshot (draft §3.2 "P.*").
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TxSnapshot {
    pub sent_ns: u64,
    /// Transmissions before this one on the connection: the order of sending, which the
    /// time alone does not give (a burst leaves at one instant).
    pub sent_order: u64,
    pub delivered_bytes: u64,
    pub delivered_ns: u64,
    pub first_sent_ns: u64,
    pub app_limited: bool,
}

/// The part of a rate sample built while the ACK is processed.
#[derive(Clone, Copy, Debug)]
struct PendingSample {
    prior_delivered_bytes: u64,
    send_elapsed_ns: u64,
    ack_elapsed_ns: u64,
    app_limited: bool,
}

#[derive(Debug, Default)]
pub(crate) struct DeliveryRate {
    /// C.delivered, C.delivered_time, C.first_sent_time.
    delivered_bytes: u64,
    delivered_ns: u64,
    first_sent_ns: u64,
    /// C.app_limited: the delivered count at which the app-limited phase ends (0 = none).
    app_limited_until: u64,
    pending: Option<PendingSample>,
    transmissions: u64,
}

impl DeliveryRate {
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// Draft §3.2: snapshot taken when a segment is (re)transmitted.
    pub fn on_send(&mut self, now_ns: u64, pipe_bytes: u64) -> TxSnapshot {
        if pipe_bytes == 0 {
            // Nothing in flight: the send and ACK intervals start now.
            self.first_sent_ns = now_ns;
            self.delivered_ns = now_ns;
        }
        self.transmissions += 1;
        TxSnapshot {
            sent_ns: now_ns,
            sent_order: self.transmissions,
            delivered_bytes: self.delivered_bytes,
            delivered_ns: self.delivered_ns,
            first_sent_ns: self.first_sent_ns,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// Draft §3.3: a segment of `bytes` was delivered for the first time.
    pub fn on_delivered(&mut self, tx: &TxSnapshot, bytes: u64, now_ns: u64) {
        self.delivered_bytes += bytes;
        self.delivered_ns = now_ns;
        let newer = self.pending.is_none_or(|p| tx.delivered_bytes >= p.prior_delivered_bytes);
        if newer {
            self.pending = Some(PendingSample {
                prior_delivered_bytes: tx.delivered_bytes,
                send_elapsed_ns: tx.sent_ns - tx.first_sent_ns,
                ack_elapsed_ns: now_ns - tx.delivered_ns,
                app_limited: tx.app_limited,
            });
            self.first_sent_ns = tx.sent_ns;
        }
    }

    /// Draft §3.3 end of ACK processing: the sample, unless its interval is shorter than
    /// the minimum RTT (an ACK compression artefact the draft says to discard).
    pub fn take_sample(&mut self, min_rtt_ns: u64) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered_bytes > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let p = self.pending.take()?;
        let interval_ns = p.send_elapsed_ns.max(p.ack_elapsed_ns);
        if interval_ns == 0 || interval_ns < min_rtt_ns {
            return None;
        }
        Some(RateSample {
            delivered_bytes: self.delivered_bytes - p.prior_delivered_bytes,
            interval_ns,
            is_app_limited: p.app_limited,
            prior_delivered_bytes: p.prior_delivered_bytes,
        })
    }

    /// Draft §3.4: the application left the pipe unfilled.
    pub fn mark_app_limited(&mut self, pipe_bytes: u64) {
        self.app_limited_until = (self.delivered_bytes + pipe_bytes).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn sample_spans_the_newest_delivered_segment() {
        let mut rate = DeliveryRate::default();
        // Ten 1000-byte segments sent 1 ms apart from t = 0, each ACKed 100 ms later.
        let mut snaps = Vec::new();
        for i in 0..10u64 {
            snaps.push(rate.on_send(i * MS, i * 1000));
        }
        let mut last = None;
        for (i, snap) in snaps.iter().enumerate() {
            rate.on_delivered(snap, 1000, 100 * MS + i as u64 * MS);
            last = rate.take_sample(50 * MS).or(last);
        }
        let s = last.expect("a sample");
        // The last segment was sent at 9 ms with 0 delivered; ACKed at 109 ms: 10 000 B / 109 ms.
        assert_eq!((s.delivered_bytes, s.interval_ns, s.is_app_limited), (10_000, 109 * MS, false));
    }

    #[test]
    fn app_limited_flag_until_the_marked_data_is_delivered() {
        let mut rate = DeliveryRate::default();
        rate.mark_app_limited(0);
        let snap = rate.on_send(0, 0);
        assert!(snap.app_limited);
        rate.on_delivered(&snap, 1000, 100 * MS);
        assert!(rate.take_sample(0).expect("sample").is_app_limited);
        assert!(!rate.on_send(100 * MS, 0).app_limited, "cleared once delivered passed the mark");
    }
}
