/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * What every millinet BPF congestion control shares: the kernel's own standard-TCP pieces,
 * the cwnd-limited test, and the placeholder name the loader replaces.
 *
 * Windows are in segments (tcp_sock.snd_cwnd), as the kernel keeps them.
 */
#ifndef MN_CC_H
#define MN_CC_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/*
 * The kernel loads struct_ops programs only under a GPL-compatible license string
 * (kernel/bpf/verifier.c, check_struct_ops_btf_id); these sources are dual licensed.
 */
#define MN_LICENSE char _license[] SEC("license") = "GPL"

/*
 * A congestion control's name as compiled: a marker and a stem. The loader (loader.c) finds the
 * marker in the object before opening it and writes the unique name "mn<pid>_<stem>" over it,
 * since a registered name is visible to the whole host. Stems have at most 5 characters so that
 * any pid (at most 7 digits) fits TCP_CA_NAME_MAX (16 bytes with the NUL).
 */
#define MN_CC_NAME(stem) "\001mncc:" stem

/* Standard TCP as the kernel implements it, exported to BPF congestion controls as kfuncs
 * (net/ipv4/bpf_tcp_ca.c). */
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* The kernel hands a congestion control's programs the socket as a tcp_sock. */
static __always_inline struct tcp_sock *tcp_sk(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline bool in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/*
 * Congestion window validation (RFC 2861, now RFC 7661) as Linux applies it
 * (tcp_is_cwnd_limited): the window grows only while it limits the sender; in slow start,
 * while the sender has had more than half of it in flight.
 */
static __always_inline bool cwnd_limited(const struct tcp_sock *tp)
{
	if (in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/*
 * The part of an ACK every control shares: nothing while the window does not limit the sender;
 * slow start below ssthresh (RFC 5681 §3.1 with RFC 3465's byte counting, the kernel's
 * tcp_slow_start). Returns the ACKed segments left for congestion avoidance (0: none).
 */
static __always_inline __u32 slow_start(struct tcp_sock *tp, __u32 acked)
{
	if (!cwnd_limited(tp))
		return 0;
	if (in_slow_start(tp))
		acked = tcp_slow_start(tp, acked);
	return acked;
}

#endif
