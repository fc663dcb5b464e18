// swift-tools-version:6.1
import PackageDescription

// Two small host apps built against the package one folder up, as a host app would depend on it
// (default traits only: pure Swift plus zlib, no other system C library).
let package = Package(
    name: "ConduitExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The package one folder up; a host app names it by URL and version (see the README).
        .package(name: "conduit", path: ".."),
    ],
    targets: [
        // A terminal chat between two processes over udp://.
        .executableTarget(name: "Chat", dependencies: [
            .product(name: "Conduit", package: "conduit"),
            .product(name: "ConduitUDP", package: "conduit"),
        ]),
        // Cursors (unreliable messages) and strokes (a data track) through a relay, in one process.
        .executableTarget(name: "Whiteboard", dependencies: [
            .product(name: "Conduit", package: "conduit"),
            .product(name: "ConduitUDP", package: "conduit"),
            .product(name: "ConduitRelay", package: "conduit"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
