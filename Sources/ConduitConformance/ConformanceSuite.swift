public import ConduitCore

/// One behavioural suite, written against `Transport` and `TransportLink` only, that every
/// transport module must pass. A transport's test target runs each ``Case`` (see the loopback
/// tests for the two-line harness); a failing case throws a ``ConformanceFailure`` naming what broke.
public struct ConformanceSuite: Sendable {
    /// One behaviour the suite checks; run each with ``ConformanceSuite/run(_:)``.
    public enum Case: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Capabilities are consistent: sizes positive, MTU within the datagram size, ordered only if reliable.
        case declaresSaneCapabilities
        /// Datagrams of every size up to the limit arrive byte for byte.
        case datagramsArriveIntact
        /// Both ends can write and read on one link.
        case bothDirections
        /// A datagram over `maxDatagramSize` is refused with an error, not truncated or dropped.
        case oversizeDatagramIsRefused
        /// Closing one end makes the peer's reads end with nil.
        case closeEndsPeerReads
        /// Closing one end keeps what it had already received readable: its reads return that,
        /// then nil (a writer whose data was delivered must not lose it to the reader's close).
        case closeKeepsWhatWasReceived
        /// Connecting where nothing listens fails with an error within a bounded time.
        case connectToNothingFails
        /// Listening twice on one address fails with `addressInUse`.
        case listenTwiceFails
        /// A call over the transport carries all four session types, whole and in order where reliable.
        case callCarriesEverySessionType
        /// A declined stream closes the sender's session with `unsupported`, and hanging up ends the call on both sides.
        case unsupportedAndHangUp

        public var description: String { rawValue }

        /// The cases that hold on any datagram link, lossy or not. The others need a link that is
        /// reliable and ordered, natively or through the core's reliability engine.
        public static let datagramCases: [Case] = [
            .declaresSaneCapabilities, .datagramsArriveIntact, .oversizeDatagramIsRefused, .connectToNothingFails, .listenTwiceFails,
        ]
    }

    /// The transport under test.
    public let transport: any Transport
    /// A fresh listening address for each use (the suite listens on several).
    public let address: @Sendable (_ index: Int) -> TransportURL
    /// An address where nothing listens.
    public let deadAddress: TransportURL

    /// The path under the links loses datagrams (a reliability engine over impaired loopback or
    /// a lossy network): unreliable session types may then deliver fewer messages, and the suite
    /// checks them for at-most-once, intact delivery instead of completeness.
    public let pathIsLossy: Bool

    /// Makes a suite for `transport`: `address(n)` gives the nth fresh listening address, `deadAddress` one where nothing listens, `pathIsLossy` whether the path may lose datagrams.
    public init(transport: any Transport, address: @escaping @Sendable (Int) -> TransportURL, deadAddress: TransportURL, pathIsLossy: Bool = false) {
        self.transport = transport
        self.address = address
        self.deadAddress = deadAddress
        self.pathIsLossy = pathIsLossy
    }

    /// Runs one case. Throws ``ConformanceFailure`` (or the transport's error) when the transport does not behave.
    public func run(_ testCase: Case) async throws {
        switch testCase {
        case .declaresSaneCapabilities: try await declaresSaneCapabilities()
        case .datagramsArriveIntact: try await datagramsArriveIntact()
        case .bothDirections: try await bothDirections()
        case .oversizeDatagramIsRefused: try await oversizeDatagramIsRefused()
        case .closeEndsPeerReads: try await closeEndsPeerReads()
        case .closeKeepsWhatWasReceived: try await closeKeepsWhatWasReceived()
        case .connectToNothingFails: try await connectToNothingFails()
        case .listenTwiceFails: try await listenTwiceFails()
        case .callCarriesEverySessionType: try await callCarriesEverySessionType()
        case .unsupportedAndHangUp: try await unsupportedAndHangUp()
        }
    }
}

/// What a conformance case found wrong.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let description: String
    /// Makes a failure with what went wrong.
    public init(_ description: String) { self.description = description }
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ConformanceFailure(message()) }
}
