/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * DCTCP (RFC 8257) and TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04) as BPF
 * congestion controls: the simulator's crates/transport/src/cc/dctcp.rs and prague.rs on the
 * kernel (docs/models/bpf-congestion-control.md).
 *
 * Both estimate α, the fraction of delivered segments the receiver reported CE-marked, once
 * per window of data (RFC 8257 §3.3): α ← (1 − g)·α + g·F, g = 1/16, α in 1/1024 from 1. The
 * kernel counts the CE-marked segments in tcp_sock.delivered_ce, from Accurate ECN's counters
 * (net.ipv4.tcp_ecn = 3, which the emulator sets) or from RFC 3168's ECE flags. On ECN feedback
 * the kernel enters its CWR state and asks ssthresh(): cwnd·(1 − α/2). A loss halves, as
 * Reno (RFC 8257 §3.5; the draft's §2.3.3): set_state overrides ssthresh on entering recovery.
 *
 * DCTCP grows as Reno. Prague's additive increase is (SRTT/25 ms)² segments per round below
 * 25 ms (the draft's §2.4.4, RTT independence), one from 25 ms; it asks the kernel for its
 * own pacing (sk_pacing_status), which paces at Linux's ratios, twice cwnd/SRTT in slow start
 * and 1.2 times after.
 *
 * As a data receiver both echo the CE state of every data segment (RFC 8257 §3.2): the kernel
 * reports each segment's state (CA_EVENT_ECN_IS_CE / CA_EVENT_ECN_NO_CE), and on a change the
 * held ACK goes first with the old state, then an ACK at once with the new one; ECE is the
 * kernel's TCP_ECN_DEMAND_CWR. RFC 3168's feedback thus counts each mark once, where Accurate
 * ECN is not to be had: this kernel (6.18) accepts net.ipv4.tcp_ecn 0 to 2 only.
 *
 * Not here, and why (docs/emulator.md): this kernel lets no congestion control choose ECT(1);
 * the flag that does (TCP_CONG_ECT_1_NEGOTIATION) came with a later kernel. So the kernel's
 * Prague sends ECT(0), like DCTCP.
 */
#include "cc.h"

MN_LICENSE;

/* include/net/tcp.h: the control needs ECT on every packet; ECE is set on outgoing ACKs. */
#define TCP_CONG_NEEDS_ECN (1U << 1)
#define TCP_ECN_DEMAND_CWR (1U << 2)

#define ALPHA_ONE 1024U
/* g = 1/16 (RFC 8257 §4.2's recommended value). */
#define GAIN_SHIFT 4
/* The draft's reference RTT for RTT independence, µs. */
#define REFERENCE_RTT_US 25000ULL

/*
 * In icsk_ca_priv, which the kernel zeroes before handing the socket to the control (see
 * coupled.bpf.c): `started` tells a fresh socket, so no init program is needed for it.
 */
struct scalable {
	__u32 alpha;
	/* SND.NXT at the start of the current window, and the counters then. */
	__u32 window_end;
	__u32 delivered;
	__u32 delivered_ce;
	/* cwnd before the last reduction, for an undo. */
	__u32 loss_cwnd;
	__u32 started;
	/* Receiver: the CE state of the latest data segment, and RCV.NXT before it. */
	__u32 ce_state;
	__u32 prior_rcv_nxt;
};

static __always_inline struct scalable *state_of(struct sock *sk)
{
	return (struct scalable *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline bool before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

static __always_inline void start_window(struct scalable *s, const struct tcp_sock *tp)
{
	s->window_end = tp->snd_nxt;
	s->delivered = tp->delivered;
	s->delivered_ce = tp->delivered_ce;
}

/* Every ACK: once SND.UNA passes the window's end, α takes the window's marked fraction. */
SEC("struct_ops/scalable_in_ack_event")
void BPF_PROG(scalable_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct scalable *s = state_of(sk);
	__u32 delivered, marked, alpha;

	if (!s->started) {
		s->started = 1;
		s->alpha = ALPHA_ONE;
		start_window(s, tp);
		return;
	}
	if (before(tp->snd_una, s->window_end))
		return;
	delivered = tp->delivered - s->delivered;
	marked = tp->delivered_ce - s->delivered_ce;
	alpha = s->alpha - (s->alpha >> GAIN_SHIFT);
	if (delivered > 0) {
		if (marked > delivered)
			marked = delivered;
		/* g·F in 1/1024: marked / delivered · 1024 / 16. */
		alpha += (marked << (10 - GAIN_SHIFT)) / delivered;
	}
	s->alpha = alpha < ALPHA_ONE ? alpha : ALPHA_ONE;
	start_window(s, tp);
}

static __always_inline void set_ece(struct tcp_sock *tp, __u32 ce)
{
	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/* RFC 8257 §3.2, the receiver: ECE says whether the latest data segment was CE-marked. */
SEC("struct_ops/scalable_cwnd_event")
void BPF_PROG(scalable_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	struct scalable *s = state_of(sk);
	__u32 ce;

	if (event != CA_EVENT_ECN_IS_CE && event != CA_EVENT_ECN_NO_CE)
		return;
	ce = event == CA_EVENT_ECN_IS_CE;
	if (ce != s->ce_state) {
		/* A held ACK reports the segments before this one, with their state. */
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			set_ece(tp, s->ce_state);
			bpf_tcp_send_ack(tp, s->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	s->prior_rcv_nxt = tp->rcv_nxt;
	s->ce_state = ce;
	set_ece(tp, ce);
}

/* RFC 8257 §3.3: cwnd·(1 − α/2), at least 2 segments. */
SEC("struct_ops/scalable_ssthresh")
__u32 BPF_PROG(scalable_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct scalable *s = state_of(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 alpha = s->started ? s->alpha : ALPHA_ONE;
	__u32 kept = cwnd - (__u32)(((__u64)cwnd * alpha) >> 11);

	s->loss_cwnd = cwnd;
	return kept > 2 ? kept : 2;
}

/* A loss: Reno's halving (RFC 8257 §3.5), over the ssthresh the kernel just asked for. */
SEC("struct_ops/scalable_set_state")
void BPF_PROG(scalable_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 half = tp->snd_cwnd >> 1;

	if (new_state != TCP_CA_Recovery || ((struct inet_connection_sock *)sk)->icsk_ca_state == TCP_CA_Recovery)
		return;
	state_of(sk)->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = half > 2 ? half : 2;
}

SEC("struct_ops/scalable_undo_cwnd")
__u32 BPF_PROG(scalable_undo_cwnd, struct sock *sk)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd, loss_cwnd = state_of(sk)->loss_cwnd;

	return cwnd > loss_cwnd ? cwnd : loss_cwnd;
}

SEC("struct_ops/dctcp_cong_avoid")
void BPF_PROG(dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	acked = slow_start(tp, acked);
	if (acked)
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* One segment per w ACKed segments, w = cwnd·(25 ms / SRTT)² below 25 ms: (SRTT/25 ms)²
 * segments per round. */
SEC("struct_ops/prague_cong_avoid")
void BPF_PROG(prague_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 srtt_us = tp->srtt_us >> 3, w = tp->snd_cwnd;

	acked = slow_start(tp, acked);
	if (!acked)
		return;
	if (srtt_us > 0 && srtt_us < REFERENCE_RTT_US)
		w = w * REFERENCE_RTT_US * REFERENCE_RTT_US / (srtt_us * srtt_us);
	tcp_cong_avoid_ai(tp, w < 0xffffffffULL ? (__u32)w : 0xffffffffU, acked);
}

/* The kernel's own pacing (tcp_update_pacing_rate), which Prague relies on. */
SEC("struct_ops/prague_init")
void BPF_PROG(prague_init, struct sock *sk)
{
	sk->sk_pacing_status = SK_PACING_NEEDED;
}

SEC(".struct_ops")
struct tcp_congestion_ops dctcp = {
	.in_ack_event = (void *)scalable_in_ack_event,
	.cwnd_event = (void *)scalable_cwnd_event,
	.ssthresh = (void *)scalable_ssthresh,
	.set_state = (void *)scalable_set_state,
	.undo_cwnd = (void *)scalable_undo_cwnd,
	.cong_avoid = (void *)dctcp_cong_avoid,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = MN_CC_NAME("dctcp"),
};

SEC(".struct_ops")
struct tcp_congestion_ops prague = {
	.init = (void *)prague_init,
	.in_ack_event = (void *)scalable_in_ack_event,
	.cwnd_event = (void *)scalable_cwnd_event,
	.ssthresh = (void *)scalable_ssthresh,
	.set_state = (void *)scalable_set_state,
	.undo_cwnd = (void *)scalable_undo_cwnd,
	.cong_avoid = (void *)prague_cong_avoid,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = MN_CC_NAME("pragu"),
};
