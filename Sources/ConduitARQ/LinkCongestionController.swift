import ConduitCore

extension ARQEngine {
    /// Which congestion controller a link runs (``Configuration/congestionControl``; the URL
    /// option `cc=bbr|newreno`).
    public enum CongestionControlAlgorithm: String, Sendable, Hashable, CaseIterable {
        /// BBR (``BBRCongestionControl``): a model of the path's bandwidth and round-trip time sets
        /// the pacing rate and window; random loss below its loss threshold does not slow it.
        case bbr
        /// NewReno (``NewRenoCongestionControl``, RFC 9002 section 7): a loss halves the window.
        case newReno = "newreno"
    }
}

/// What the reliability engine asks of a congestion controller: the seam ``ARQEngine`` calls
/// through, whichever algorithm ``ARQEngine/Configuration/congestionControl`` chose. Windows and
/// bytes in flight count whole packets on the wire; rates are bytes per nanosecond.
protocol CongestionController: Sendable {
    /// The most bytes that may be in flight.
    var window: Int { get }
    /// NewReno's `ssthresh`; `Int.max` for a controller without one.
    var slowStartThreshold: Int { get }
    /// Ack-eliciting bytes sent and neither acknowledged nor declared lost.
    var bytesInFlight: Int { get }
    /// Loss episodes the controller responded to (recovery periods).
    var congestionEvents: Int { get }
    /// Loss episodes whose response was undone because every loss proved spurious.
    var congestionEventsUndone: Int { get }
    /// Persistent congestion events (RFC 9002 section 7.6).
    var persistentCongestionEvents: Int { get }

    /// Whether `bytes` more may be sent now.
    func allows(bytes: Int) -> Bool
    /// A packet of `bytes` entered the flight.
    mutating func onPacketSent(bytes: Int)
    /// A packet left the flight without being acknowledged (lost, or its frames abandoned).
    mutating func onPacketRemovedFromFlight(bytes: Int)
    /// One packet newly acknowledged.
    mutating func onPacketAcked(bytes: Int, sentAt: ConduitInstant, isAppLimited: Bool)
    /// The end of an ACK that acknowledged something new, with its delivery rate sample.
    mutating func onAckProcessed(_ sample: LinkRateSample, now: ConduitInstant)
    /// Packets declared lost, the latest sent at `sentAt`; returns whether a new loss episode
    /// (recovery period) started.
    mutating func onCongestionEvent(sentAt: ConduitInstant, now: ConduitInstant, lostPackets: Int) -> Bool
    /// A loss of episode `event` proved spurious; returns whether the episode's response was undone.
    mutating func onSpuriousLoss(event: Int) -> Bool
    /// RFC 9002 section 7.6: a run of losses spanning three probe timeouts.
    mutating func onPersistentCongestion()
    /// The rate the pacer releases packets at, in bytes per nanosecond.
    func pacingRate(smoothedRttNanoseconds: Int64) -> Double
    /// Path MTU discovery changed the packet size: windows count in the new one.
    mutating func maxDatagramSizeChanged(to size: Int)
}

extension ARQEngine.CongestionControlAlgorithm {
    /// A controller of this algorithm sending packets of `maxDatagramSize` bytes.
    func makeController(maxDatagramSize: Int) -> any CongestionController {
        switch self {
        case .bbr: BBRCongestionControl(maxDatagramSize: maxDatagramSize)
        case .newReno: NewRenoCongestionControl(maxDatagramSize: maxDatagramSize)
        }
    }
}

extension NewRenoCongestionControl: CongestionController {
    /// NewReno grows its window per packet acknowledged; the rate sample is not used.
    mutating func onAckProcessed(_ sample: LinkRateSample, now: ConduitInstant) {}

    /// RFC 9002 section 7.7: 1.25 windows per smoothed RTT (``LinkPacer``).
    func pacingRate(smoothedRttNanoseconds: Int64) -> Double {
        LinkPacer.rate(window: window, smoothedRttNanoseconds: smoothedRttNanoseconds)
    }
}
