/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * HighSpeed TCP (RFC 3649) as a BPF congestion control.
 *
 * RFC 3649 §5: with w the window in segments, congestion avoidance adds a(w) segments per
 * round trip (w += a(w)/w per ACKed segment) and a congestion event keeps (1 - b(w))·w. Up to
 * Low_Window = 38 segments a = 1 and b = 0.5, standard TCP. a(w) and b(w) come from
 * highspeed_table.h, the RFC's own table (Appendix B, one row per integer a, from 38 to 94717
 * segments; b in 1/256ths), as Linux's tcp_highspeed.c has it; a window uses the row of the
 * largest table window not above it, and a window above the last row the last row. Slow start
 * is standard TCP's: RFC 3649 leaves it unchanged.
 */
#include "cc.h"
#include "highspeed_table.h"

MN_LICENSE;

/* The row whose window is the largest not above cwnd (row 0 below Low_Window). */
static __always_inline const struct hs_row *row_of(__u32 cwnd)
{
	__u32 lo = 0, hi = HS_ROWS;

	/* Invariant: rows[lo].window <= cwnd or lo = 0; rows[hi].window > cwnd or hi = HS_ROWS. */
	for (int i = 0; i < HS_SEARCH_STEPS && hi - lo > 1; i++) {
		__u32 mid = (lo + hi) / 2;

		if (mid >= HS_ROWS)
			break;
		if (hs_rows[mid].window <= cwnd)
			lo = mid;
		else
			hi = mid;
	}
	return &hs_rows[lo < HS_ROWS ? lo : 0];
}

SEC("struct_ops/hs_cong_avoid")
void BPF_PROG(hs_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 per_segment;

	acked = slow_start(tp, acked);
	if (!acked)
		return;
	/* a(w) segments per w ACKed: one segment per w / a(w) ACKed segments. */
	per_segment = tp->snd_cwnd / row_of(tp->snd_cwnd)->a;
	tcp_cong_avoid_ai(tp, per_segment ? per_segment : 1, acked);
}

SEC("struct_ops/hs_ssthresh")
__u32 BPF_PROG(hs_ssthresh, struct sock *sk)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	__u32 kept = cwnd - (__u32)(((__u64)cwnd * row_of(cwnd)->b_256) >> 8);

	/* RFC 3649 §5: w <- (1 - b(w))·w; at least 2 segments as RFC 5681 eq. (4). */
	return kept > 2 ? kept : 2;
}

SEC("struct_ops/hs_undo_cwnd")
__u32 BPF_PROG(hs_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops highspeed = {
	.cong_avoid = (void *)hs_cong_avoid,
	.ssthresh = (void *)hs_ssthresh,
	.undo_cwnd = (void *)hs_undo_cwnd,
	.name = MN_CC_NAME("hs"),
};
