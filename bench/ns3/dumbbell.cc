// The ns-3 side of `brisk bench`: the network of its `brisk-fq_codel` and
// `brisk100-fq_codel` cases built in ns-3.37, so one invocation times both
// simulators on the same load. `brisk bench` compiles this file against Debian's libns3-dev,
// runs it for as many simulated seconds as its own cases, and times it.
//
// The network: sender -- r1 == bottleneck == r2 -- receiver.
//   - Bottleneck: 100 Mbit/s and 10 ms each way (20 ms base RTT).
//   - Down queue (r1 towards r2, where data queues): FQ-CoDel with
//     Linux's defaults (ns-3's FqCoDelQueueDisc: 1024 flows, 10240
//     packets, target 5 ms, interval 100 ms, quantum one MTU).
//   - Up queue (r2 towards r1, ACKs and echoes): a 1000-packet FIFO,
//     Brisk's default when only the down queue is configured.
//   - Load: `--flows` bulk flows (1 unless given) from sender to receiver
//     for the whole run, plus a ping every 10 ms (56-byte payload), as in
//     Brisk's cases.
//
// Where ns-3 cannot match Brisk's case exactly:
//   - The bulk flow is TCP with ns-3's TcpCubic (ns-3's default SACK,
//     timestamps and delayed ACKs every second segment), not Brisk's
//     encrypted transport over UDP with CUBIC. Segments are 1448 bytes so
//     that data packets are 1500-byte IP datagrams like Brisk's.
//   - Socket buffers are 8 MiB so that neither window limits the flow.
//   - Access links are 10 Gbit/s point-to-point links with no delay
//     (Brisk's hosts are attached by pure delays of zero): each adds a
//     serialization time of 1.2 us per full packet and its own events.
//   - Each device's own transmit queue holds one packet, so the queue
//     discs above hold the backlog, as Linux does with a small device ring.
//   - The ping is ICMP echo (ns-3's V4Ping); Brisk's is a UDP probe of
//     the same size echoed by the receiver.
//
// Output: one JSON object on stdout. `bottleneck_packet_hops` counts
// packets received at the far end of the bottleneck in either direction,
// as Brisk's `packet_hops` does; `link_packet_hops` counts every link,
// access links included. Progress goes to stderr as "progress <s>" once
// per simulated second.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-apps-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>
#include <sys/resource.h>

using namespace ns3;

namespace
{

uint64_t g_bottleneck_hops = 0;
uint64_t g_link_hops = 0;

void
CountBottleneckHop(Ptr<const Packet>)
{
    ++g_bottleneck_hops;
}

void
CountLinkHop(Ptr<const Packet>)
{
    ++g_link_hops;
}

void
ReportProgress(uint32_t second, uint32_t last)
{
    std::fprintf(stderr, "progress %u\n", second);
    std::fflush(stderr);
    if (second < last)
    {
        Simulator::Schedule(Seconds(1), &ReportProgress, second + 1, last);
    }
}

double
CpuSeconds()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
           (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

} // namespace

int
main(int argc, char* argv[])
{
    double seconds = 60.0;
    CommandLine cmd(__FILE__);
    uint32_t flows = 1;
    cmd.AddValue("seconds", "Simulated seconds", seconds);
    cmd.AddValue("flows", "Bulk TCP flows", flows);
    cmd.Parse(argc, argv);
    if (!(seconds > 0.0))
    {
        std::fprintf(stderr, "--seconds must be positive, got %g\n", seconds);
        return 2;
    }
    if (flows < 1)
    {
        std::fprintf(stderr, "--flows must be at least 1, got %u\n", flows);
        return 2;
    }

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8 << 20));

    NodeContainer nodes;
    nodes.Create(4);
    Ptr<Node> sender = nodes.Get(0);
    Ptr<Node> r1 = nodes.Get(1);
    Ptr<Node> r2 = nodes.Get(2);
    Ptr<Node> receiver = nodes.Get(3);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("10Gbps"));
    access.SetChannelAttribute("Delay", StringValue("0ms"));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
    bottleneck.SetChannelAttribute("Delay", StringValue("10ms"));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));

    NetDeviceContainer left = access.Install(sender, r1);
    NetDeviceContainer middle = bottleneck.Install(r1, r2);
    NetDeviceContainer right = access.Install(r2, receiver);

    InternetStackHelper stack;
    stack.Install(nodes);

    // Installed before the addresses: assigning one installs ns-3's default
    // queue disc on any device that has none.
    TrafficControlHelper down;
    down.SetRootQueueDisc("ns3::FqCoDelQueueDisc");
    down.Install(middle.Get(0));
    TrafficControlHelper up;
    up.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("1000p"));
    up.Install(middle.Get(1));

    Ipv4AddressHelper addresses;
    addresses.SetBase("10.0.1.0", "255.255.255.0");
    addresses.Assign(left);
    addresses.SetBase("10.0.2.0", "255.255.255.0");
    addresses.Assign(middle);
    addresses.SetBase("10.0.3.0", "255.255.255.0");
    Ipv4InterfaceContainer receiver_side = addresses.Assign(right);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    Ipv4Address receiver_address = receiver_side.GetAddress(1);

    const uint16_t port = 5001;
    PacketSinkHelper sink_helper("ns3::TcpSocketFactory",
                                 InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sink = sink_helper.Install(receiver);
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(receiver_address, port));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    bulk.SetAttribute("SendSize", UintegerValue(64 << 10));
    ApplicationContainer source;
    for (uint32_t i = 0; i < flows; ++i)
    {
        source.Add(bulk.Install(sender));
    }

    V4PingHelper ping_helper(receiver_address);
    ping_helper.SetAttribute("Interval", TimeValue(MilliSeconds(10)));
    ping_helper.SetAttribute("Size", UintegerValue(56));
    ApplicationContainer ping = ping_helper.Install(sender);

    Time end = Seconds(seconds);
    for (ApplicationContainer* apps : {&sink, &source, &ping})
    {
        apps->Start(Seconds(0));
        apps->Stop(end);
    }

    middle.Get(0)->TraceConnectWithoutContext("MacRx", MakeCallback(&CountBottleneckHop));
    middle.Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&CountBottleneckHop));
    Config::ConnectWithoutContext("/NodeList/*/DeviceList/*/$ns3::PointToPointNetDevice/MacRx",
                                  MakeCallback(&CountLinkHop));

    auto last = static_cast<uint32_t>(seconds);
    if (last >= 1)
    {
        Simulator::Schedule(Seconds(1), &ReportProgress, 1u, last);
    }

    double cpu_before = CpuSeconds();
    auto wall_before = std::chrono::steady_clock::now();
    Simulator::Stop(end);
    Simulator::Run();
    std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_before;
    double cpu = CpuSeconds() - cpu_before;

    uint64_t delivered = DynamicCast<PacketSink>(sink.Get(0))->GetTotalRx();
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();

    std::printf("{\"simulator\":\"ns-3\",\"version\":\"%u.%u\",\"simulated_s\":%.6f,\"flows\":%u,"
                "\"delivered_bytes\":%llu,\"goodput_bit_s\":%.1f,"
                "\"bottleneck_packet_hops\":%llu,\"link_packet_hops\":%llu,"
                "\"events\":%llu,\"run_cpu_s\":%.6f,\"run_wall_s\":%.6f}\n",
                Version::Major(),
                Version::Minor(),
                seconds,
                flows,
                static_cast<unsigned long long>(delivered),
                delivered * 8.0 / seconds,
                static_cast<unsigned long long>(g_bottleneck_hops),
                static_cast<unsigned long long>(g_link_hops),
                static_cast<unsigned long long>(events),
                cpu,
                wall.count());
    return 0;
}
