extension BBRCongestionControl {
    /// BBR's state machine.
    public enum State: Sendable, Hashable {
        /// Doubling the rate each round until the bandwidth stops growing (by 25 % for three
        /// rounds) or a round's loss rate passes the threshold.
        case startup
        /// Draining the queue Startup built, pacing at 0.35 times the bandwidth until one BDP is
        /// in flight.
        case drain
        /// ProbeBW_DOWN: pacing below the estimate to leave headroom.
        case probeBandwidthDown
        /// ProbeBW_CRUISE: pacing at the estimate.
        case probeBandwidthCruise
        /// ProbeBW_REFILL: one round at the estimate before probing.
        case probeBandwidthRefill
        /// ProbeBW_UP: pacing above the estimate to find more bandwidth.
        case probeBandwidthUp
        /// ProbeRTT: a small window to measure the propagation delay.
        case probeRTT
    }
}
