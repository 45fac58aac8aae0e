// The millinet `dumbbell` scenario (docs/validation.md#dumbbell) in ns-3 (3.37, Debian's libns3-dev):
//
//   server --10 Gbit/s, 10 ms-- router --R, 1 ms, drop-tail Q bytes-- client
//
// One BulkSend TCP flow server -> client. The bottleneck rate optionally alternates between
// R and --switchRate every --switchPeriod seconds. No queue disc: the point-to-point device's
// own DropTailQueue (in bytes) is the only queue, as millinet's link queue is.
//
// Writes --out (JSON: goodput, retransmitted segments, RTOs, mean RTT, drops) and --cwndOut
// (CSV: t, cwnd_bytes every --sampleStep seconds). crosscheck/run.py builds and drives it.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <vector>

using namespace ns3;

namespace
{

// Counters filled by the sender socket's traces.
struct SenderStats
{
    uint64_t retransmits = 0;
    uint64_t rtos = 0;
    uint64_t fastRecoveries = 0;
    uint64_t forwarded = 0;
    double rttSumMs = 0;
    uint64_t rttSamples = 0;
    bool sawAck = false;
    bool timestamps = true;
    SequenceNumber32 highestAck;
    SequenceNumber32 highestSent;
    // Without timestamps (Karn, as millinet): send time of each segment end, and whether
    // the segment was retransmitted.
    std::map<uint32_t, std::pair<Time, bool>> inFlight;
    uint32_t cwnd = 0;
    std::vector<std::pair<double, uint32_t>> cwndSeries;
};

SenderStats g_stats;

// Data segments leaving the sender: a segment starting below the highest byte already sent
// is a retransmission.
void
OnTx(Ptr<const Packet> packet, const TcpHeader& header, Ptr<const TcpSocketBase>)
{
    uint32_t len = packet->GetSize();
    if (len == 0)
    {
        return;
    }
    SequenceNumber32 start = header.GetSequenceNumber();
    SequenceNumber32 end = start + len;
    bool retransmission = start < g_stats.highestSent;
    if (retransmission)
    {
        ++g_stats.retransmits;
    }
    if (end > g_stats.highestSent)
    {
        g_stats.highestSent = end;
    }
    if (!g_stats.timestamps)
    {
        auto it = g_stats.inFlight.find(end.GetValue());
        if (it == g_stats.inFlight.end())
        {
            g_stats.inFlight[end.GetValue()] = {Simulator::Now(), retransmission};
        }
        else
        {
            it->second = {Simulator::Now(), true};
        }
    }
}

// ACKs reaching the sender: one RTT sample per ACK that advances SND.UNA, defined as
// millinet defines it (sender.rs): now - TSecr (a 1 ms clock) with timestamps, else now -
// last send time of the newly acknowledged data unless some of it was retransmitted.
void
OnRx(Ptr<const Packet>, const TcpHeader& header, Ptr<const TcpSocketBase>)
{
    if (!(header.GetFlags() & TcpHeader::ACK))
    {
        return;
    }
    SequenceNumber32 ack = header.GetAckNumber();
    if (!g_stats.sawAck)
    {
        g_stats.sawAck = true; // the SYN-ACK: no data acknowledged yet
        g_stats.highestAck = ack;
        return;
    }
    if (!(ack > g_stats.highestAck))
    {
        return;
    }
    g_stats.highestAck = ack;
    Time now = Simulator::Now();
    if (g_stats.timestamps && header.HasOption(TcpOption::TS))
    {
        auto ts = DynamicCast<const TcpOptionTS>(header.GetOption(TcpOption::TS));
        double sentMs = ts->GetEcho();
        g_stats.rttSumMs += now.GetSeconds() * 1e3 - sentMs;
        ++g_stats.rttSamples;
        return;
    }
    Time lastSent;
    bool retransmitted = false;
    auto it = g_stats.inFlight.begin();
    while (it != g_stats.inFlight.end() && !(SequenceNumber32(it->first) > ack))
    {
        lastSent = std::max(lastSent, it->second.first);
        retransmitted = retransmitted || it->second.second;
        it = g_stats.inFlight.erase(it);
    }
    if (!retransmitted && !lastSent.IsZero())
    {
        g_stats.rttSumMs += (now - lastSent).GetSeconds() * 1e3;
        ++g_stats.rttSamples;
    }
}

void
OnCongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_LOSS)
    {
        ++g_stats.rtos;
    }
    else if (now == TcpSocketState::CA_RECOVERY)
    {
        ++g_stats.fastRecoveries;
    }
}

void
OnCwnd(uint32_t, uint32_t now)
{
    g_stats.cwnd = now;
}

// Packets the router forwards toward the client. Without a queue disc, the traffic-control
// layer silently discards what arrives while the device's queue is stopped (no room for one
// more MTU): that is the drop-tail drop, counted as forwarded minus enqueued.
void
OnForward(const Ipv4Header&, Ptr<const Packet>, uint32_t interface)
{
    if (interface == 2)
    {
        ++g_stats.forwarded;
    }
}

void
SampleCwnd(Time step)
{
    g_stats.cwndSeries.emplace_back(Simulator::Now().GetSeconds(), g_stats.cwnd);
    Simulator::Schedule(step, &SampleCwnd, step);
}

// The socket exists once the application has started: hook its traces then.
void
ConnectTraces(Ptr<BulkSendApplication> app)
{
    Ptr<Socket> socket = app->GetSocket();
    NS_ABORT_MSG_IF(!socket, "BulkSend has no socket yet");
    bool ok = socket->TraceConnectWithoutContext("Tx", MakeCallback(&OnTx)) &&
              socket->TraceConnectWithoutContext("Rx", MakeCallback(&OnRx)) &&
              socket->TraceConnectWithoutContext("CongState", MakeCallback(&OnCongState)) &&
              socket->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnCwnd));
    NS_ABORT_MSG_IF(!ok, "could not connect the TCP socket traces");
}

void
SwitchRate(NetDeviceContainer bottleneck, DataRate a, DataRate b, bool toB, Time period)
{
    DataRate rate = toB ? b : a;
    for (uint32_t i = 0; i < bottleneck.GetN(); ++i)
    {
        DynamicCast<PointToPointNetDevice>(bottleneck.Get(i))->SetDataRate(rate);
    }
    Simulator::Schedule(period, &SwitchRate, bottleneck, a, b, !toB, period);
}

NetDeviceContainer
MakeLink(Ptr<Node> a, Ptr<Node> b, double rateBps, double delayS, uint64_t queueBytes, uint16_t mtuBytes)
{
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(rateBps))));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(mtuBytes));
    p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delayS)));
    p2p.SetQueue("ns3::DropTailQueue<Packet>",
                 "MaxSize",
                 QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, queueBytes)));
    return p2p.Install(a, b);
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string cc = "TcpCubic";
    double rateBps = 1e9;
    double switchRateBps = 0;
    double switchPeriodS = 1.0;
    uint64_t queueBytes = 10000000;
    double accessRateBps = 10e9;
    double accessDelayS = 0.010;
    uint64_t accessQueueBytes = 10000000;
    double bottleneckDelayS = 0.001;
    uint32_t mss = 1400;
    double durationS = 10.0;
    double appStartS = 0.0;
    uint32_t initCwnd = 10;
    double minRtoS = 0.2;
    uint32_t delAckCount = 1;
    double delAckTimeoutS = 0.04;
    bool sack = true;
    bool timestamps = true;
    bool windowScaling = true;
    uint32_t sndBuf = 128u << 20;
    uint32_t rcvBuf = 1073725440u;
    std::string recovery = "TcpClassicRecovery";
    double sampleStepS = 0.01;
    std::string out = "ns3.json";
    std::string cwndOut = "ns3-cwnd.csv";

    CommandLine cmd(__FILE__);
    cmd.AddValue("cc", "ns-3 congestion control TypeId name (TcpNewReno, TcpCubic, ...)", cc);
    cmd.AddValue("rate", "bottleneck rate R, bit/s", rateBps);
    cmd.AddValue("switchRate", "second bottleneck rate, bit/s (0: constant rate)", switchRateBps);
    cmd.AddValue("switchPeriod", "seconds between rate switches", switchPeriodS);
    cmd.AddValue("queueBytes", "bottleneck drop-tail queue, bytes", queueBytes);
    cmd.AddValue("accessRate", "access link rate, bit/s", accessRateBps);
    cmd.AddValue("accessDelay", "access link one-way delay, s", accessDelayS);
    cmd.AddValue("accessQueueBytes", "access link queue, bytes", accessQueueBytes);
    cmd.AddValue("delay", "bottleneck one-way delay, s", bottleneckDelayS);
    cmd.AddValue("mss", "segment payload bytes", mss);
    cmd.AddValue("duration", "simulated seconds", durationS);
    cmd.AddValue("appStart", "when the sender connects, s", appStartS);
    cmd.AddValue("initCwnd", "initial window, segments", initCwnd);
    cmd.AddValue("minRto", "minimum RTO, s", minRtoS);
    cmd.AddValue("delAckCount", "segments per ACK (1: no delayed ACK)", delAckCount);
    cmd.AddValue("delAckTimeout", "delayed-ACK timeout, s", delAckTimeoutS);
    cmd.AddValue("sack", "SACK", sack);
    cmd.AddValue("timestamps", "timestamps option", timestamps);
    cmd.AddValue("windowScaling", "window scale option", windowScaling);
    cmd.AddValue("sndBuf", "sender socket buffer, bytes", sndBuf);
    cmd.AddValue("rcvBuf", "receiver socket buffer, bytes", rcvBuf);
    cmd.AddValue("recovery", "ns-3 recovery TypeId (TcpClassicRecovery, TcpPrrRecovery)", recovery);
    cmd.AddValue("sampleStep", "cwnd sampling step, s", sampleStepS);
    cmd.AddValue("out", "summary JSON path", out);
    cmd.AddValue("cwndOut", "cwnd CSV path", cwndOut);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + cc));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", StringValue("ns3::" + recovery));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initCwnd));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAckCount));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(delAckTimeoutS)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sndBuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvBuf));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minRtoS)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(timestamps));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(windowScaling));
    // CUBIC with standard slow start, as the cross-check runs millinet's (hystart=off).
    Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(false));
    // BBR needs pacing (docs/models/transport.md §3).
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(cc == "TcpBbr"));
    g_stats.timestamps = timestamps;

    // A segment is one IP packet, as in millinet: the links' MTU (1500 by default) is raised
    // to MSS + 20 IP + 32 TCP bytes when that is larger, so that ns-3 does not fragment.
    uint16_t mtuBytes = static_cast<uint16_t>(std::max<uint32_t>(1500, mss + 52));
    NodeContainer nodes;
    nodes.Create(3); // server, router, client
    NetDeviceContainer access =
        MakeLink(nodes.Get(0), nodes.Get(1), accessRateBps, accessDelayS, accessQueueBytes, mtuBytes);
    NetDeviceContainer bottleneck =
        MakeLink(nodes.Get(1), nodes.Get(2), rateBps, bottleneckDelayS, queueBytes, mtuBytes);

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addresses;
    addresses.SetBase("10.1.1.0", "255.255.255.0");
    addresses.Assign(access);
    addresses.SetBase("10.1.2.0", "255.255.255.0");
    Ipv4InterfaceContainer clientSide = addresses.Assign(bottleneck);
    // Assign installs a default queue disc (fq_codel); removing it leaves the device's
    // drop-tail byte queue as the only queue, as in millinet.
    TrafficControlHelper tch;
    tch.Uninstall(access);
    tch.Uninstall(bottleneck);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<Queue<Packet>> bottleneckQueue =
        DynamicCast<PointToPointNetDevice>(bottleneck.Get(0))->GetQueue();
    NS_ABORT_MSG_IF(nodes.Get(1)->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(
                        bottleneck.Get(0)),
                    "a queue disc is still installed on the bottleneck");
    bool forwardTraced = nodes.Get(1)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext(
        "UnicastForward",
        MakeCallback(&OnForward));
    NS_ABORT_MSG_IF(!forwardTraced, "could not trace the router's forwarding");

    uint16_t port = 5001;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinkApps = sinkHelper.Install(nodes.Get(2));
    sinkApps.Start(Seconds(0));
    BulkSendHelper bulk("ns3::TcpSocketFactory",
                        InetSocketAddress(clientSide.GetAddress(1), port));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    bulk.SetAttribute("SendSize", UintegerValue(65536));
    ApplicationContainer bulkApps = bulk.Install(nodes.Get(0));
    bulkApps.Start(Seconds(appStartS));
    Simulator::Schedule(Seconds(appStartS) + NanoSeconds(1),
                        &ConnectTraces,
                        DynamicCast<BulkSendApplication>(bulkApps.Get(0)));

    Simulator::Schedule(Seconds(0), &SampleCwnd, Seconds(sampleStepS));
    if (switchRateBps > 0)
    {
        Simulator::Schedule(Seconds(switchPeriodS),
                            &SwitchRate,
                            bottleneck,
                            DataRate(static_cast<uint64_t>(rateBps)),
                            DataRate(static_cast<uint64_t>(switchRateBps)),
                            true,
                            Seconds(switchPeriodS));
    }

    Simulator::Stop(Seconds(durationS));
    Simulator::Run();

    uint64_t delivered = DynamicCast<PacketSink>(sinkApps.Get(0))->GetTotalRx();
    uint64_t drops = g_stats.forwarded - bottleneckQueue->GetTotalReceivedPackets() +
                     bottleneckQueue->GetTotalDroppedPackets();
    Simulator::Destroy();

    std::ofstream json(out);
    json.precision(12);
    json << "{\"delivered_bytes\": " << delivered
         << ", \"goodput_bps\": " << delivered * 8.0 / durationS
         << ", \"retransmits\": " << g_stats.retransmits << ", \"rtos\": " << g_stats.rtos
         << ", \"fast_recoveries\": " << g_stats.fastRecoveries
         << ", \"bottleneck_drops\": " << drops << ", \"rtt_ms_mean\": "
         << (g_stats.rttSamples ? g_stats.rttSumMs / g_stats.rttSamples : 0.0)
         << ", \"rtt_samples\": " << g_stats.rttSamples << "}\n";
    std::ofstream csv(cwndOut);
    csv << "t,cwnd_bytes\n";
    for (const auto& [t, cwnd] : g_stats.cwndSeries)
    {
        csv << t << "," << cwnd << "\n";
    }
    return json && csv ? 0 : 1;
}
