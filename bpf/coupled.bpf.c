/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * The coupled MPTCP congestion controls as BPF congestion controls: LIA (RFC 6356), OLIA
 * (Khalili, Gast, Popovic, Le Boudec, "MPTCP is not Pareto-optimal", IEEE/ACM ToN 2013) and
 * BALIA (Peng, Walid, Hwang, Low, "Multipath TCP: analysis, design, and implementation",
 * IEEE/ACM ToN 2016). docs/models/coupled-cc.md gives the rules; the simulator's versions are
 * crates/transport/src/cc/{lia,olia,balia}.rs.
 *
 * Sharing. The subflows of one MPTCP connection find each other in the hash map `connections`,
 * keyed by the connection's token, which the subflow's context carries (tcp_sock ->
 * icsk_ulp_data, a struct mptcp_subflow_context, read through BTF/CO-RE). A subflow takes a
 * slot of its connection's entry the first time it has a token and publishes there, on every
 * ACK and on a timeout, its window, smoothed RTT and OLIA's loss distances; the increase rules
 * read every slot.
 * A slot has one writer, its subflow; another subflow's values may be one ACK old, as the
 * subflows of a connection run on their own sockets' locks. The entry goes when its last
 * subflow is released.
 *
 * What is standard TCP (RFC 6356 §3): slow start, fast retransmit and recovery; the
 * multiplicative decrease is Reno's for LIA and OLIA and BALIA's own. A socket that is not an
 * MPTCP subflow (tcp_sock.is_mptcp false), a subflow without a token, and a connection with
 * more than MAX_SUBFLOWS subflows (those past it) are Reno: the kernel's tcp_cong_avoid_ai
 * with w = cwnd, one segment per window of ACKed segments.
 *
 * Arithmetic. BPF has no floating point: an increase rule gives g, the window increase per
 * ACKed segment, in units of 2^-32 segments (ONE), and the fractions add up in the socket's
 * private area until they make whole segments (positive or, for OLIA, negative).
 */
#include "cc.h"

MN_LICENSE;

#define MAX_SUBFLOWS 8
#define ONE (1ULL << 32)
/* Bounds that keep the fixed-point products below 2^64: windows up to 2^20 segments, RTTs
 * up to 2^24 µs (16 s). */
#define MAX_CWND ((1U << 20) - 1)
#define MAX_RTT_US ((1U << 24) - 1)

struct slot {
	__u32 used;
	__u32 cwnd;
	__u32 rtt_us;
	__u32 unused;
	/* OLIA's ℓ_1r, ℓ_2r: segments ACKed between the last two congestion events, and since
	 * the last one. */
	__u64 l1;
	__u64 l2;
};

struct connection {
	struct slot slot[MAX_SUBFLOWS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct connection);
} connections SEC(".maps");

/*
 * In the socket's icsk_ca_priv, which the kernel zeroes before it hands the socket to a
 * congestion control (tcp_assign_congestion_control, tcp_reinit_congestion_control in
 * net/ipv4/tcp_cong.c): so no init program. One would be wrong, too: the SYN-ACK's ACK can
 * reach pkts_acked, which takes a slot, before the kernel calls init.
 */
struct subflow {
	__u32 token;
	/* 1 + the index of its slot; 0 before it has one. */
	__u32 slot_1;
	/* Accumulated increase, ONE per segment. */
	__s64 fraction;
};

static __always_inline struct subflow *subflow_of(struct sock *sk)
{
	return (struct subflow *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* The MPTCP connection token of a subflow; 0 for a plain TCP socket or before it has one. */
static __always_inline __u32 token_of(struct sock *sk)
{
	struct mptcp_subflow_context *ctx = NULL;
	__u32 token = 0;

	if (!bpf_core_field_exists(tcp_sk(sk)->is_mptcp) || !tcp_sk(sk)->is_mptcp)
		return 0;
	if (bpf_core_read(&ctx, sizeof(ctx), &((struct inet_connection_sock *)sk)->icsk_ulp_data) || !ctx)
		return 0;
	if (bpf_core_read(&token, sizeof(token), &ctx->token))
		return 0;
	return token;
}

/* The subflow's connection, with a slot taken on first use; NULL: behave as Reno. */
static struct connection *join(struct sock *sk, struct subflow *sf)
{
	struct connection *conn, fresh = {};
	__u32 token;

	if (sf->slot_1) {
		/* Map keys are read from the stack, not from the socket. */
		token = sf->token;
		conn = bpf_map_lookup_elem(&connections, &token);
		if (conn)
			return conn;
		sf->slot_1 = 0; /* the entry was removed under us: join again */
	}
	token = token_of(sk);
	if (!token)
		return NULL;
	conn = bpf_map_lookup_elem(&connections, &token);
	if (!conn) {
		bpf_map_update_elem(&connections, &token, &fresh, BPF_NOEXIST);
		conn = bpf_map_lookup_elem(&connections, &token);
		if (!conn)
			return NULL;
	}
	for (__u32 i = 0; i < MAX_SUBFLOWS; i++) {
		if (__sync_val_compare_and_swap(&conn->slot[i].used, 0, 1) == 0) {
			sf->token = token;
			sf->slot_1 = i + 1;
			return conn;
		}
	}
	return NULL;
}

static __always_inline struct slot *own_slot(struct connection *conn, struct subflow *sf)
{
	__u32 i = sf->slot_1 - 1;

	return i < MAX_SUBFLOWS ? &conn->slot[i] : NULL;
}

/* Publishes the window and smoothed RTT (tcp_sock.srtt_us holds 8·SRTT, RFC 6298). */
static __always_inline void publish(struct slot *s, const struct tcp_sock *tp)
{
	__u32 rtt = tp->srtt_us >> 3;

	s->cwnd = tp->snd_cwnd < MAX_CWND ? tp->snd_cwnd : MAX_CWND;
	s->rtt_us = rtt < MAX_RTT_US ? rtt : MAX_RTT_US;
}

/* A slot the rules count: a live subflow with a window and an RTT sample. */
static __always_inline bool counts(const struct slot *s)
{
	return s->used && s->cwnd && s->rtt_us;
}

/*
 * Q_k = (w_k/rtt_k²) / (Σ_p w_p/rtt_p)², in ONE per segment: the increase per ACKed segment of
 * one TCP on path k's RTT, shared by all paths (LIA's alpha/w_total is max_k Q_k, OLIA's first
 * term Q_r, BALIA's x_r/(τ_r (Σ x_k)²) = Q_r). Computed as w_k / T_k² with
 * T_k = Σ_p w_p·rtt_k/rtt_p (segments, in 2^-16 units).
 */
static __u64 q_of(const struct connection *conn, __u32 k)
{
	const struct slot *own;
	__u64 t = 0, ratio;

	if (k >= MAX_SUBFLOWS)
		return 0;
	own = &conn->slot[k];
	if (!counts(own))
		return 0;
	for (__u32 p = 0; p < MAX_SUBFLOWS; p++) {
		const struct slot *s = &conn->slot[p];

		if (counts(s))
			t += ((__u64)s->cwnd << 16) * own->rtt_us / s->rtt_us;
	}
	if (!t)
		return 0;
	/* w_k/T_k in 2^-24 units (at most 1, T_k includes w_k), then divided by T_k again. */
	ratio = ((__u64)own->cwnd << 40) / t;
	return (ratio << 24) / t;
}

/* Adds g·acked (ONE per segment) to the window; whole segments move cwnd, the rest waits. */
static __always_inline void grow(struct tcp_sock *tp, struct subflow *sf, __s64 g, __u32 acked)
{
	__s64 whole;
	__s64 cwnd;

	sf->fraction += g * (__s64)acked;
	/* Whole segments, rounded toward zero (no signed division in BPF before ISA v4). */
	whole = sf->fraction >= 0 ? (__s64)((__u64)sf->fraction >> 32) : -(__s64)((__u64)-sf->fraction >> 32);
	if (!whole)
		return;
	sf->fraction -= whole * (__s64)ONE;
	cwnd = (__s64)tp->snd_cwnd + whole;
	if (cwnd < 1)
		cwnd = 1;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;
	/* A window the rule shrinks (OLIA) is no congestion event: ssthresh follows it down so
	 * that slow start does not resume (docs/models/coupled-cc.md, "OLIA's negative increase"). */
	if (tp->snd_ssthresh > tp->snd_cwnd)
		tp->snd_ssthresh = tp->snd_cwnd;
}

/*
 * The increase of one ACK: slow start, then the rule's g for an MPTCP subflow or Reno's for
 * anything else. rule(conn, own index) returns g.
 */
static __always_inline void cong_avoid(struct sock *sk, __u32 acked, __s64 (*rule)(const struct connection *, __u32))
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct subflow *sf = subflow_of(sk);
	struct connection *conn;
	struct slot *own;

	acked = slow_start(tp, acked);
	if (!acked)
		return;
	conn = join(sk, sf);
	own = conn ? own_slot(conn, sf) : NULL;
	if (!own || !tp->srtt_us) {
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	publish(own, tp);
	grow(tp, sf, rule(conn, sf->slot_1 - 1), acked);
}

/* LIA, RFC 6356 §3 eq. (1)-(2): g_i = min(alpha/w_total, 1/w_i), alpha/w_total = max_k Q_k. */
static __s64 lia_rule(const struct connection *conn, __u32 r)
{
	__u64 best = 0, reno;

	for (__u32 k = 0; k < MAX_SUBFLOWS; k++) {
		__u64 q = q_of(conn, k);

		if (q > best)
			best = q;
	}
	if (r >= MAX_SUBFLOWS || !conn->slot[r].cwnd)
		return 0;
	reno = ONE / conn->slot[r].cwnd;
	return best < reno ? best : reno;
}

/*
 * OLIA (Khalili et al. 2013, the increase term): g_r = Q_r + α_r/w_r with n paths, M the paths
 * of largest window, B the presumably best paths (largest ℓ_r/rtt_r², ℓ_r = max(ℓ_1r, ℓ_2r)):
 * α_r = 1/(n·|B∖M|) for r in B∖M, −1/(n·|M|) for r in M when B∖M is not empty, 0 otherwise.
 * ℓ/rtt² is compared as ℓ·ρ² with ρ = rtt_min/rtt in 2^-16 units, which keeps the order.
 */
static __s64 olia_rule(const struct connection *conn, __u32 r)
{
	__u32 n = 0, max_cwnd = 0, min_rtt = MAX_RTT_US, m = 0, b = 0, in_m = 0, in_b = 0;
	__u64 best = 0, score[MAX_SUBFLOWS] = {};
	__u32 cwnd;

	for (__u32 k = 0; k < MAX_SUBFLOWS; k++) {
		const struct slot *s = &conn->slot[k];

		if (!counts(s))
			continue;
		n++;
		if (s->cwnd > max_cwnd)
			max_cwnd = s->cwnd;
		if (s->rtt_us < min_rtt)
			min_rtt = s->rtt_us;
	}
	for (__u32 k = 0; k < MAX_SUBFLOWS; k++) {
		const struct slot *s = &conn->slot[k];
		__u64 l, rho;

		if (!counts(s))
			continue;
		l = s->l1 > s->l2 ? s->l1 : s->l2;
		l = l < (1ULL << 31) ? l : (1ULL << 31);
		rho = ((__u64)min_rtt << 16) / s->rtt_us;
		score[k] = l * rho * rho;
		if (score[k] > best)
			best = score[k];
	}
	for (__u32 k = 0; k < MAX_SUBFLOWS; k++) {
		const struct slot *s = &conn->slot[k];

		if (!counts(s))
			continue;
		if (s->cwnd == max_cwnd) {
			m++;
			in_m |= 1U << k;
		} else if (score[k] == best) {
			b++;
			in_b |= 1U << k;
		}
	}
	if (r >= MAX_SUBFLOWS || !n || !(cwnd = conn->slot[r].cwnd))
		return 0;
	/* in_b holds B∖M: the best paths that do not have the largest window. */
	if (in_b & (1U << r))
		return q_of(conn, r) + ONE / ((__u64)n * b * cwnd);
	if (b && (in_m & (1U << r)))
		return (__s64)q_of(conn, r) - (__s64)(ONE / ((__u64)n * m * cwnd));
	return q_of(conn, r);
}

/*
 * BALIA's α_r = max_k x_k / x_r with x_k = w_k/rtt_k (Peng et al. 2016), in 2^-16 units, and
 * capped at 512 so that the products below stay within 64 bits (a path 512 times slower than
 * the fastest gets a negligible share either way).
 */
#define BALIA_ALPHA_MAX (512ULL << 16)

static __u64 balia_alpha(const struct connection *conn, __u32 r)
{
	__u64 x_max = 0, x_r = 0;

	for (__u32 k = 0; k < MAX_SUBFLOWS; k++) {
		const struct slot *s = &conn->slot[k];
		__u64 x;

		if (!counts(s))
			continue;
		x = ((__u64)s->cwnd << 20) / s->rtt_us;
		if (x > x_max)
			x_max = x;
		if (k == r)
			x_r = x;
	}
	if (!x_r)
		return 1 << 16;
	x_r = (x_max << 16) / x_r;
	return x_r < BALIA_ALPHA_MAX ? x_r : BALIA_ALPHA_MAX;
}

/* BALIA's increase: g_r = x_r/(τ_r (Σ_k x_k)²) · ((1 + α_r)/2) · ((4 + α_r)/5) = Q_r·f(α_r). */
static __s64 balia_rule(const struct connection *conn, __u32 r)
{
	__u64 alpha = balia_alpha(conn, r);
	__u64 factor = (((1ULL << 16) + alpha) / 2) * (((4ULL << 16) + alpha) / 5) >> 16;

	return (q_of(conn, r) * factor) >> 16;
}

/* The subflow's slot, or NULL (not an MPTCP subflow, or no slot). */
static __always_inline struct slot *joined_slot(struct sock *sk)
{
	struct subflow *sf = subflow_of(sk);
	struct connection *conn = join(sk, sf);

	return conn ? own_slot(conn, sf) : NULL;
}

/* Frees the slot; the last subflow of a connection removes its entry. */
SEC("struct_ops/coupled_release")
void BPF_PROG(coupled_release, struct sock *sk)
{
	struct subflow *sf = subflow_of(sk);
	struct connection *conn;
	struct slot *own;
	__u32 token = sf->token;

	if (!sf->slot_1)
		return;
	conn = bpf_map_lookup_elem(&connections, &token);
	own = conn ? own_slot(conn, sf) : NULL;
	sf->slot_1 = 0;
	if (!own)
		return;
	own->cwnd = 0;
	own->rtt_us = 0;
	own->l1 = 0;
	own->l2 = 0;
	own->used = 0;
	for (__u32 i = 0; i < MAX_SUBFLOWS; i++)
		if (conn->slot[i].used)
			return;
	bpf_map_delete_elem(&connections, &token);
}

/* Every ACK of new data: publish, and count ℓ_2r (OLIA's; LIA and BALIA do not read it). */
SEC("struct_ops/coupled_pkts_acked")
void BPF_PROG(coupled_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct slot *own = joined_slot(sk);

	if (!own)
		return;
	publish(own, tcp_sk(sk));
	if (sample->pkts_acked > 0)
		own->l2 += sample->pkts_acked;
}

/*
 * A timeout sets the window to what is in flight plus one without an ACK (tcp_enter_loss,
 * net/ipv4/tcp_input.c, which then sets the Loss state): publish it, or the other subflows'
 * rules would read the window from before the timeout until this subflow's next ACK, up to
 * a backed-off RTO later. The simulator's rules read every subflow's current window.
 */
SEC("struct_ops/coupled_set_state")
void BPF_PROG(coupled_set_state, struct sock *sk, __u8 new_state)
{
	struct slot *own;

	if (new_state != TCP_CA_Loss)
		return;
	own = joined_slot(sk);
	if (own)
		publish(own, tcp_sk(sk));
}

SEC("struct_ops/coupled_undo_cwnd")
__u32 BPF_PROG(coupled_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/lia_cong_avoid")
void BPF_PROG(lia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	cong_avoid(sk, acked, lia_rule);
}

SEC("struct_ops/olia_cong_avoid")
void BPF_PROG(olia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	cong_avoid(sk, acked, olia_rule);
}

SEC("struct_ops/balia_cong_avoid")
void BPF_PROG(balia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	cong_avoid(sk, acked, balia_rule);
}

/* LIA's decrease is standard TCP's (RFC 6356 §3): max(cwnd/2, 2). */
SEC("struct_ops/lia_ssthresh")
__u32 BPF_PROG(lia_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

/*
 * OLIA's decrease is standard TCP's; a congestion event closes a loss interval: ℓ_1r takes
 * ℓ_2r, which restarts, unless nothing was ACKed since the last event (back-to-back timeouts
 * and a lost retransmission stay one episode, as docs/models/coupled-cc.md).
 */
SEC("struct_ops/olia_ssthresh")
__u32 BPF_PROG(olia_ssthresh, struct sock *sk)
{
	struct slot *own = joined_slot(sk);

	if (own && own->l2) {
		own->l1 = own->l2;
		own->l2 = 0;
	}
	return tcp_reno_ssthresh(sk);
}

/* BALIA's decrease (Peng et al. 2016): w_r/2 · min(α_r, 1.5), at least 2 segments kept. */
SEC("struct_ops/balia_ssthresh")
__u32 BPF_PROG(balia_ssthresh, struct sock *sk)
{
	struct subflow *sf = subflow_of(sk);
	struct connection *conn = join(sk, sf);
	struct slot *own = conn ? own_slot(conn, sf) : NULL;
	__u64 alpha, cwnd = tcp_sk(sk)->snd_cwnd, kept;

	if (!own)
		return tcp_reno_ssthresh(sk);
	publish(own, tcp_sk(sk));
	alpha = balia_alpha(conn, sf->slot_1 - 1);
	if (alpha > (3ULL << 15))
		alpha = 3ULL << 15;
	kept = cwnd - ((cwnd * alpha) >> 17);
	return kept > 2 ? kept : 2;
}

/* One tcp_congestion_ops per rule; what the three share is one set of programs. */
#define COUPLED_OPS(rule)                                         \
	SEC(".struct_ops")                                        \
	struct tcp_congestion_ops rule = {                        \
		.release = (void *)coupled_release,               \
		.pkts_acked = (void *)coupled_pkts_acked,         \
		.set_state = (void *)coupled_set_state,           \
		.undo_cwnd = (void *)coupled_undo_cwnd,           \
		.cong_avoid = (void *)rule##_cong_avoid,          \
		.ssthresh = (void *)rule##_ssthresh,              \
		.name = MN_CC_NAME(#rule),                        \
	}

COUPLED_OPS(lia);
COUPLED_OPS(olia);
COUPLED_OPS(balia);
