// swift-tools-version: 6.1
import PackageDescription

/// Benchmarks live in a package of their own so that building or depending on `conduit` never
/// pulls in package-benchmark and its dependencies. Run from this directory:
/// `swift package benchmark` (see README.md).
let package = Package(
    name: "ConduitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "conduit", path: ".."),
        // Only the malloc interposer: the default RuntimeInterposer trait would pull
        // swift-runtime-interposer, which the benchmarks do not need (no ARC metrics).
        .package(url: "https://github.com/ordo-one/package-benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "FragmentationBenchmarks",
            dependencies: [
                .product(name: "ConduitCore", package: "conduit"),
                .product(name: "ConduitARQ", package: "conduit"),
                .product(name: "ConduitRooms", package: "conduit"),
                .product(name: "ConduitRelayCore", package: "conduit"),
                .product(name: "ConduitImpairment", package: "conduit"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/FragmentationBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "WireBenchmarks",
            dependencies: [
                .product(name: "ConduitCore", package: "conduit"),
                .product(name: "ConduitARQ", package: "conduit"),
                .product(name: "ConduitRooms", package: "conduit"),
                .product(name: "ConduitRelayCore", package: "conduit"),
                .product(name: "ConduitImpairment", package: "conduit"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/WireBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "ARQEngineBenchmarks",
            dependencies: [
                .product(name: "ConduitCore", package: "conduit"),
                .product(name: "ConduitARQ", package: "conduit"),
                .product(name: "ConduitRooms", package: "conduit"),
                .product(name: "ConduitRelayCore", package: "conduit"),
                .product(name: "ConduitImpairment", package: "conduit"),
                .product(name: "ConduitReliableTransport", package: "conduit"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/ARQEngineBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "InvitationBenchmarks",
            dependencies: [
                .product(name: "ConduitCore", package: "conduit"),
                .product(name: "ConduitARQ", package: "conduit"),
                .product(name: "ConduitRooms", package: "conduit"),
                .product(name: "ConduitRelayCore", package: "conduit"),
                .product(name: "ConduitImpairment", package: "conduit"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/InvitationBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "RelayBenchmarks",
            dependencies: [
                .product(name: "ConduitCore", package: "conduit"),
                .product(name: "ConduitARQ", package: "conduit"),
                .product(name: "ConduitRooms", package: "conduit"),
                .product(name: "ConduitRelayCore", package: "conduit"),
                .product(name: "ConduitImpairment", package: "conduit"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/RelayBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ]
)
