public import ConduitCore

/// One behavioural suite, written against ``Transport`` and ``TransportLink`` only, that every
/// transport module must pass. A transport's test target runs each ``Case`` (see the loopback
/// tests for the two-line harness); a failing case throws a ``ConformanceFailure`` naming what broke.
public struct ConformanceSuite: Sendable {
    public enum Case: String, CaseIterable, Sendable, CustomStringConvertible {
        case declaresSaneCapabilities
        case datagramsArriveIntact
        case bothDirections
        case oversizeDatagramIsRefused
        case closeEndsPeerReads
        case connectToNothingFails
        case listenTwiceFails
        case callCarriesEverySessionType
        case unsupportedAndHangUp

        public var description: String { rawValue }

        /// The cases that hold on any datagram link, lossy or not. The others need a link that is
        /// reliable and ordered, natively or through the core's reliability engine.
        public static let datagramCases: [Case] = [
            .declaresSaneCapabilities, .datagramsArriveIntact, .oversizeDatagramIsRefused, .connectToNothingFails, .listenTwiceFails,
        ]
    }

    public let transport: any Transport
    /// A fresh listening address for each use (the suite listens on several).
    public let address: @Sendable (_ index: Int) -> TransportURL
    /// An address where nothing listens.
    public let deadAddress: TransportURL

    /// The path under the links loses datagrams (a reliability engine over impaired loopback or
    /// a lossy network): unreliable session types may then deliver fewer messages, and the suite
    /// checks them for at-most-once, intact delivery instead of completeness.
    public let pathIsLossy: Bool

    public init(transport: any Transport, address: @escaping @Sendable (Int) -> TransportURL, deadAddress: TransportURL, pathIsLossy: Bool = false) {
        self.transport = transport
        self.address = address
        self.deadAddress = deadAddress
        self.pathIsLossy = pathIsLossy
    }

    public func run(_ testCase: Case) async throws {
        switch testCase {
        case .declaresSaneCapabilities: try await declaresSaneCapabilities()
        case .datagramsArriveIntact: try await datagramsArriveIntact()
        case .bothDirections: try await bothDirections()
        case .oversizeDatagramIsRefused: try await oversizeDatagramIsRefused()
        case .closeEndsPeerReads: try await closeEndsPeerReads()
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
    public init(_ description: String) { self.description = description }
}

func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ConformanceFailure(message()) }
}
