// swift-tools-version: 6.1
import PackageDescription

// The module graph, bottom up (targets below are listed in this order). An arrow reads "depends
// on"; every module also depends on ConduitCore. Sans-IO modules (no sockets, clocks, tasks, C or
// Foundation) are marked *.
//
//   ConduitCore*        vocabulary, wire format v1, fragmentation, pacing, the session layer,
//                       CallMachine, SansIOMachine, the transport protocols and registry
//   ConduitARQ*         the reliability engine (ARQEngine): channels, acks, retransmission
//   ConduitImpairment*  seeded loss, duplication, reordering, delay, rate
//   ConduitRooms*       the rooms client: relay wire, ConferenceMachine, InvitationClient
//   ConduitDriver       SansIODriver: read loop, pump, one deadline timer, on a ConduitClock
//   ConduitRelayCore*   the relay server's half: RelayMachine, InvitationBook   -> Rooms
//   ConduitTesting      VirtualClock, SansIOPair for host apps' tests  -> Driver, Impairment
//   ConduitLoopback     in-process transport          -> ARQ (options), Impairment, Driver (clock)
//   ConduitReliableTransport  ReliableTransportLink: ARQ over a lossy link     -> ARQ, Driver
//   ConduitSRTP, ConduitUDP, ConduitKernelSCTP, ConduitSCTP   transports (C behind traits)
//   Conduit             the public API: runtime, calls, conferences, streams
//                                           -> Rooms, Driver, Loopback, ReliableTransport
//   ConduitRelay        RelayServer and tokens          -> RelayCore, Rooms, Driver, ReliableTransport
//   ConduitConformance  one suite every transport passes             -> Driver, Impairment
//   ConduitTooling, conduit   the command line (jobs as a library, then the executable)
//
// An app links Conduit (plus the transports it picks): not the relay server, not the tooling.
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "conduit",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Conduit", targets: ["Conduit"]),
        .library(name: "ConduitCore", targets: ["ConduitCore"]),
        .library(name: "ConduitARQ", targets: ["ConduitARQ"]),
        .library(name: "ConduitRooms", targets: ["ConduitRooms"]),
        .library(name: "ConduitRelayCore", targets: ["ConduitRelayCore"]),
        .library(name: "ConduitImpairment", targets: ["ConduitImpairment"]),
        .library(name: "ConduitDriver", targets: ["ConduitDriver"]),
        .library(name: "ConduitTesting", targets: ["ConduitTesting"]),
        .library(name: "ConduitLoopback", targets: ["ConduitLoopback"]),
        .library(name: "ConduitConformance", targets: ["ConduitConformance"]),
        .library(name: "ConduitReliableTransport", targets: ["ConduitReliableTransport"]),
        .library(name: "ConduitUDP", targets: ["ConduitUDP"]),
        .library(name: "ConduitSRTP", targets: ["ConduitSRTP"]),
        .library(name: "ConduitSCTP", targets: ["ConduitSCTP"]),
        .library(name: "ConduitKernelSCTP", targets: ["ConduitKernelSCTP"]),
        .library(name: "ConduitRelay", targets: ["ConduitRelay"]),
        .executable(name: "conduit", targets: ["conduit"]),
        .plugin(name: "StreamCatalogPlugin", targets: ["StreamCatalogPlugin"]),
        .plugin(name: "StreamCatalogCommand", targets: ["StreamCatalogCommand"]),
    ],
    traits: [
        .trait(name: "SCTP", description: "sctp+udp:// (ConduitSCTP) through the system's usrsctp (Debian: libusrsctp-dev)"),
        .trait(name: "SRTP", description: "SRTP protection for udp:// (ConduitSRTP) through the system's libsrtp2 (Debian: libsrtp2-dev)"),
        .trait(name: "KernelSCTP", description: "sctp:// (ConduitKernelSCTP) through the kernel's SCTP and lksctp-tools (Debian: libsctp-dev)"),
        .trait(name: "NATS", description: "relays clustered through NATS (`conduit relay --cluster`) through the official C client libnats (Debian: libnats-dev; tests also start nats-server)"),
        .trait(name: "Zlib", description: "zlib compression of labeled channels (the system zlib, which Swift on Linux already needs)"),
        .default(enabledTraits: ["Zlib"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Configuration from a JSON file, the environment and the command line (JSON is a default
        // trait; the command-line provider is behind CommandLineArguments).
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: [.defaults, "CommandLineArguments"]),
    ],
    targets: [
        .target(
            name: "ConduitCore",
            dependencies: [.product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strictSettings
        ),
        // The reliability engine (ARQ): acknowledgements, retransmission, partial reliability,
        // congestion and flow control, sans-IO. Knows datagrams and channels, nothing above them.
        .target(
            name: "ConduitARQ",
            dependencies: ["ConduitCore", .product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strictSettings
        ),
        // Deterministic, seeded network impairment (loss, duplication, reordering, delay, rate),
        // sans-IO: the loopback transport, the UDP impairment proxy and tests use it.
        .target(
            name: "ConduitImpairment",
            dependencies: ["ConduitCore"],
            swiftSettings: strictSettings
        ),
        // The rooms client, sans-IO: the relay's wire (envelopes, room control, tracks, labeled
        // channels), the conference machine and the invitation client.
        .target(
            name: "ConduitRooms",
            dependencies: ["ConduitCore", .product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strictSettings
        ),
        // One driver for every sans-IO machine, on an injected clock (sockets come from the link).
        .target(
            name: "ConduitDriver",
            dependencies: ["ConduitCore"],
            swiftSettings: strictSettings
        ),
        // The relay server's sans-IO half: rooms, membership, routing, per-receiver queues,
        // invitations. `ConduitRelay` hosts it on transports.
        .target(
            name: "ConduitRelayCore",
            dependencies: ["ConduitCore", "ConduitRooms", .product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strictSettings
        ),
        // For host apps' tests: a virtual clock to run calls and conferences on, and a pair of
        // sans-IO machines over a seeded impaired path.
        .target(
            name: "ConduitTesting",
            dependencies: ["ConduitCore", "ConduitDriver", "ConduitImpairment"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ConduitLoopback",
            dependencies: ["ConduitCore", "ConduitARQ", "ConduitImpairment", "ConduitDriver"],
            swiftSettings: strictSettings
        ),
        // CRC32c with the CPU's instruction, for the transports (the core stays free of C).
        .target(name: "CConduitCRC32C"),
        // The core's reliability engine driven over any unreliable TransportLink (clock and tasks).
        .target(
            name: "ConduitReliableTransport",
            dependencies: [
                "ConduitCore", "ConduitARQ", "ConduitDriver", "CConduitCRC32C", .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // libsrtp2 (the system's, found with pkg-config) and SRTP/SRTCP protection on top of it.
        .systemLibrary(name: "CSRTP"),
        .target(
            name: "ConduitSRTP",
            dependencies: [.target(name: "CSRTP", condition: .when(traits: ["SRTP"])), "ConduitCore"],
            swiftSettings: strictSettings
        ),
        // UDP networking on SwiftNIO: the UDP transport (RTP framing, cookie handshake) and the
        // user-space impairment proxy.
        .target(
            name: "ConduitUDP",
            dependencies: ["ConduitARQ",
                "ConduitCore", "ConduitImpairment",
                .target(name: "ConduitSRTP", condition: .when(traits: ["SRTP"])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // Kernel SCTP (sctp://), where the kernel has it: lksctp-tools' API (libsctp-dev).
        .systemLibrary(name: "CLibSCTP"),
        .target(
            name: "ConduitKernelSCTP",
            dependencies: [
                .target(name: "CLibSCTP", condition: .when(traits: ["KernelSCTP"])), "ConduitCore", .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // usrsctp (the system's, found with pkg-config; the shim header defines what pkg-config's
        // -D flags would), a few C helpers around it, and SCTP over UDP with data channels.
        .systemLibrary(name: "CUsrsctp"),
        .target(name: "CUsrsctpSupport", dependencies: ["CUsrsctp", "CConduitCRC32C"]),
        .target(
            name: "ConduitSCTP",
            dependencies: [
                "ConduitUDP",
                .target(name: "CUsrsctp", condition: .when(traits: ["SCTP"])),
                .target(name: "CUsrsctpSupport", condition: .when(traits: ["SCTP"])),
                "ConduitCore",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // The system zlib, for labeled channels declared with `compress` (Sora style).
        .systemLibrary(name: "CZlib"),
        .target(
            name: "Conduit",
            dependencies: ["ConduitARQ",
                "ConduitCore", "ConduitRooms", "ConduitDriver", "ConduitLoopback", "ConduitReliableTransport",
                .target(name: "CZlib", condition: .when(traits: ["Zlib"])),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // --- Relays clustered through NATS (issue 16 item 3) ---
        // libnats, the official NATS C client (the system's, found with pkg-config), and a small
        // Swift wrapper over it: connect, publish, subscribe (behind the NATS trait).
        .systemLibrary(name: "CNats", pkgConfig: "libnats"),
        .target(
            name: "ConduitNATS",
            dependencies: [.target(name: "CNats", condition: .when(traits: ["NATS"])), "ConduitCore"],
            swiftSettings: strictSettings
        ),
        // --- end of the NATS block ---
        // The relay for group rooms: tokens (HMAC-SHA256), the server that hosts the core's
        // RelayMachine over any transports, in process or as `conduit relay`.
        .target(
            name: "ConduitRelay",
            dependencies: ["ConduitARQ",
                "ConduitCore", "ConduitRooms", "ConduitRelayCore", "ConduitDriver",
                "ConduitReliableTransport",
                .product(name: "DequeModule", package: "swift-collections"),
                .target(name: "ConduitNATS", condition: .when(traits: ["NATS"])),  // --cluster (issue 16)
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ConduitConformance",
            dependencies: ["ConduitImpairment", "ConduitCore", "ConduitDriver"],
            swiftSettings: strictSettings
        ),
        // What the command-line tool does, as a library so it is testable in process: seeded
        // verifiable payloads, the listen and send jobs and their JSON reports.
        .target(
            name: "ConduitTooling",
            dependencies: ["ConduitImpairment", "ConduitRooms", "Conduit", "ConduitCore", "ConduitSCTP",
                // The join-storm generator (issue 18) crafts handshakes and link packets itself.
                "ConduitUDP", "ConduitARQ",
                // The in-process room bench (issue 16) runs the relay's shard group on loopback links.
                "ConduitRelay", "ConduitRelayCore", "ConduitLoopback"],
            swiftSettings: strictSettings
        ),
        // The stream catalog: IDs fixed at design time, checked at build time.
        .target(name: "ConduitStreamCatalog", swiftSettings: strictSettings),
        .executableTarget(
            name: "conduit-stream-catalog",
            dependencies: ["ConduitStreamCatalog"],
            swiftSettings: strictSettings
        ),
        .plugin(
            name: "StreamCatalogPlugin",
            capability: .buildTool(),
            dependencies: ["conduit-stream-catalog"]
        ),
        .plugin(
            name: "StreamCatalogCommand",
            capability: .command(
                intent: .custom(verb: "stream-catalog", description: "Lint or print the *.streams catalogs of this package")
            ),
            dependencies: ["conduit-stream-catalog"]
        ),
        .executableTarget(
            name: "conduit",
            dependencies: ["ConduitCore", "ConduitImpairment", "ConduitRelayCore", "ConduitRooms",
                "Conduit",
                "ConduitUDP",
                "ConduitSCTP",
                "ConduitTooling",
                "ConduitKernelSCTP",
                "ConduitRelay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings,
            plugins: ["StreamCatalogPlugin"]
        ),
        // Reference runs: a plain UDP blast (sendmmsg/recvmmsg) and a one-function library that
        // keeps tsctp's debug output off. C, our own code, no dependencies.
        .executableTarget(name: "conduit-udp-blast"),
        .testTarget(
            name: "ConduitCoreTests",
            dependencies: ["ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitLoopbackTests",
            dependencies: ["ConduitLoopback", "ConduitConformance", "ConduitTesting", "ConduitDriver", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitUDPTests",
            dependencies: ["ConduitLogCapture",
                "ConduitUDP",
                "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment",
                "ConduitConformance",
                "ConduitReliableTransport",
                "Conduit",
                "ConduitSRTP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                "ConduitNetworkTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitSCTPTests",
            dependencies: ["ConduitLogCapture",
                "ConduitSCTP",
                "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment",
                "ConduitConformance",
                "Conduit",
                "ConduitUDP",
                "ConduitTooling",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "ConduitInteropSupport",
                "ConduitNetworkTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitSRTPTests",
            dependencies: ["ConduitSRTP", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment",
                           "ConduitNetworkTestSupport"],  // Process.exitStatus (issue 18, leak-free child waits)
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitReliableTransportTests",
            dependencies: ["ConduitReliableTransport", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment", "ConduitLoopback", "ConduitConformance", "ConduitTesting",
                           .product(name: "MetricsTestKit", package: "swift-metrics")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitToolingTests",
            dependencies: ["ConduitTooling", "Conduit", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment", "ConduitLoopback", "ConduitUDP"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitStreamCatalogTests",
            dependencies: ["ConduitStreamCatalog"],
            swiftSettings: strictSettings
        ),
        // Interoperability harness: launches the pion data-channel peer (Tests/Interop/sctp-pion)
        // and reads its report. Test support only, no product; test targets depend on it.
        .target(
            name: "ConduitInteropSupport",
            dependencies: ["ConduitCore"], // its lock: TSanVisibleMutex
            swiftSettings: strictSettings
        ),
        // A Logger whose lines tests can read (what the library logs). Test support only, no product.
        .target(
            name: "ConduitLogCapture",
            dependencies: ["ConduitCore", .product(name: "Logging", package: "swift-log")], // ConduitCore: its lock, TSanVisibleMutex
            swiftSettings: strictSettings
        ),
        // What the network transports' tests share: calls through the impairment proxy, a UDP
        // port where nothing listens. Test support only, no product; test targets depend on it.
        .target(
            name: "ConduitNetworkTestSupport",
            dependencies: [
                "Conduit",
                "ConduitCore", "ConduitImpairment",
                "ConduitUDP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // A test-only kernel SCTP peer in C (its <linux/sctp.h> clashes with usrsctp.h in one module).
        .target(name: "CKernelSCTPTestPeer"),
        .testTarget(
            name: "ConduitKernelSCTPTests",
            dependencies: ["ConduitLogCapture", "ConduitKernelSCTP", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment", .product(name: "Logging", package: "swift-log"),
                // The conformance suite over sctp://, and kernel SCTP over UDP against sctp+udp://
                // (run for real in a qemu guest by Scripts/kernel-sctp-vm.sh).
                "ConduitConformance", "ConduitSCTP", "CKernelSCTPTestPeer"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitInteropTests",
            dependencies: ["ConduitInteropSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitRelayTests",
            dependencies: ["ConduitLogCapture", "ConduitTesting", "ConduitDriver",
                "ConduitRelay", "Conduit", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment", "ConduitUDP", "ConduitLoopback", "ConduitTooling",
                // Relays clustered through NATS (issue 16): a nats-server of the test's own, the client.
                "ConduitNetworkTestSupport", .target(name: "ConduitNATS", condition: .when(traits: ["NATS"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        // Every code block of the README and the DocC articles that shows a program or a command,
        // run: Swift programs verbatim in *Programs.swift, shell blocks against the built conduit.
        .testTarget(
            name: "ConduitDocumentationTests",
            dependencies: [
                "Conduit", "ConduitTesting", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment", "ConduitLoopback", "ConduitConformance", "ConduitUDP", "ConduitSCTP", "ConduitRelay",
                "ConduitNetworkTestSupport",  // Process.exitStatus (issue 18, leak-free child waits)
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ConduitTests",
            dependencies: ["ConduitLogCapture",
                "Conduit", "ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitImpairment", "ConduitTesting", "ConduitLoopback",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

// Fuzzing (issue 18): one harness per parser and machine the network reaches, as a library the
// test suite replays (`ConduitFuzzTargetsTests`), and the libFuzzer executable `conduit-fuzz`, only
// when `CONDUIT_FUZZ` is set: its `main` starts libFuzzer's driver, which only the sanitizer build's
// flags link (`Scripts/asan-fuzz-flags.sh`), so the ordinary build must not link it. See `Scripts/fuzz.sh`.
package.targets.append(contentsOf: [
    .target(
        name: "ConduitFuzzTargets",
        dependencies: ["ConduitCore", "ConduitARQ", "ConduitRooms", "ConduitRelayCore", "ConduitUDP", "ConduitSCTP", "ConduitRelay", "Conduit",
            .product(name: "NIOCore", package: "swift-nio"),
        ],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "ConduitFuzzTargetsTests",
        dependencies: ["ConduitFuzzTargets", "ConduitCore", "ConduitRooms"],
        swiftSettings: strictSettings
    ),
])
if Context.environment["CONDUIT_FUZZ"] != nil {
    package.products.append(.executable(name: "conduit-fuzz", targets: ["conduit-fuzz"]))
    package.targets.append(
        .executableTarget(name: "conduit-fuzz", dependencies: ["ConduitFuzzTargets"], path: "Fuzz/conduit-fuzz", swiftSettings: strictSettings)
    )
    // libFuzzer's coverage (what -sanitize=fuzzer turns on: edges, indirect calls, comparisons,
    // inline 8-bit counters, the PC table) in our own library modules only, where the harnesses
    // aim. Given to swiftc for the whole build, it also instrumented the dependencies and the
    // tests: 51 s more (95 s of CPU) for the build CI makes, alone (281 s with it here, 250 without coverage).
    let coverage = SwiftSetting.unsafeFlags(["-sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table"])
    for target in package.targets where target.type == .regular {
        target.swiftSettings = target.swiftSettings.map { $0 + [coverage] }  // C targets have none
    }
}

// Documentation: swift-docc-plugin only when asked for (`CONDUIT_DOCS=1 swift package --enable-all-traits generate-documentation --target MODULE`;
// Scripts/docs.sh extracts from the test build and needs no plugin),
// so that host apps and the ordinary build do not resolve it.
if Context.environment["CONDUIT_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}
