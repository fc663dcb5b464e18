import ConduitCore

/// BBR congestion control, version 3 as the IETF draft specifies it (draft-ietf-ccwg-bbr, BBRv3;
/// the design is Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
/// Congestion Control", ACM Queue 14(5), 2016).
///
/// The sender models the path by its bottleneck bandwidth (the largest delivery rate measured over
/// the last two bandwidth-probing cycles) and its round-trip propagation time (the smallest RTT of
/// the last 10 s), paces at a gain times that bandwidth and keeps about two bandwidth-delay
/// products in flight. States: Startup (pacing gain 2.77, until the bandwidth stops growing by 25 %
/// for three rounds, or the loss rate of a round passes the loss threshold), Drain, ProbeBW's
/// DOWN / CRUISE / REFILL / UP cycle (0.9, 1.0, 1.0, 1.25; one probe every 2–3 s, or sooner as Reno
/// would), and ProbeRTT (half a BDP for 200 ms once the minimum RTT has not been refreshed for 5 s).
///
/// Loss: as in BBRv3, losses matter only when a round's loss rate passes the 2 % threshold while
/// the flow probes (Startup, ProbeBW REFILL and UP); then `inflight_hi` caps the window. Two
/// deviations make random loss (a lossy radio link, not a full queue) unable to collapse the rate:
/// the cap is never below β (0.7) times the window target (two BDPs) rather than β times one BDP,
/// and BBRv3's short-term lower bounds (`bw_lo`, `inflight_lo`), which shrink by β in every round
/// with a loss, are not kept. A loss episode whose every loss proves spurious restores the cap
/// it lowered. A third deviation gives flows that share a queue equal rates: a FAST TCP window
/// bound while a queue that the flow's own drain left standing lasts (`updateQueueBound`).
/// Not modelled: ACK aggregation (`extra_acked`), ECN, idle restart.
public struct BBRCongestionControl: Sendable, Hashable {
    static let startupPacingGain = 2.77
    static let startupWindowGain = 2.0
    static let drainPacingGain = 0.35
    static let windowGain = 2.0
    static let probeUpWindowGain = 2.25
    static let lossThreshold = 0.02
    static let beta = 0.7
    static let headroom = 0.15
    static let pacingMargin = 0.01
    static let fullLossCount = 6
    static let minRttWindow: Int64 = 10_000 * LinkTime.millisecond
    static let probeRttInterval: Int64 = 5_000 * LinkTime.millisecond
    static let probeRttDuration: Int64 = 200 * LinkTime.millisecond
    /// FAST TCP's α: the bytes, in packets, each flow keeps queued at a shared bottleneck.
    static let queueSharePackets = 16
    /// A round whose smallest RTT exceeds `min_rtt` by this fraction of it found a standing queue.
    static let standingQueueFraction = 0.1
    /// The pacing rate while the queue bound holds: above what the bound lets through, so the
    /// window, not the bandwidth estimate, sets the rate.
    static let queueBoundPacingGain = 1.25

    /// The packet size windows are counted in: the size in use (path MTU discovery changes it).
    public private(set) var maxDatagramSize: Int
    /// The current state.
    public private(set) var state = State.startup
    /// The congestion window, in bytes.
    public private(set) var window: Int
    /// Ack-eliciting bytes sent and neither acknowledged nor declared lost.
    public private(set) var bytesInFlight = 0
    /// Loss episodes (a loss of a packet sent after the previous episode started).
    public private(set) var congestionEvents = 0
    /// Loss episodes whose every loss proved spurious; a cap they lowered was restored.
    public private(set) var congestionEventsUndone = 0
    /// Persistent congestion events: the model was discarded and Startup began again.
    public private(set) var persistentCongestionEvents = 0
    /// The propagation delay estimate (`BBR.min_rtt`), in nanoseconds; `Int64.max` before a sample.
    public private(set) var minRttNanoseconds: Int64 = .max
    /// Whether Startup found the bandwidth (`BBR.filled_pipe`).
    public private(set) var filledPipe = false
    /// `BBR.inflight_hi`: the most bytes in flight the loss rate allows; `Int.max` until a probe met loss.
    public private(set) var inflightHigh = Int.max
    /// Rounds (flights acknowledged) since the start.
    public private(set) var roundCount = 0

    private var currentCycleBandwidth = 0.0
    private var previousCycleBandwidth = 0.0
    private var pacingRateValue = 0.0
    private var pacingGain = Self.startupPacingGain
    private var windowGain = Self.startupWindowGain
    private var minRttStamp = ConduitInstant.zero
    private var probeRttMinNanoseconds: Int64 = .max
    private var probeRttMinStamp = ConduitInstant.zero
    private var probeRttExpired = false
    private var nextRoundDelivered = 0
    private var isRoundStart = false
    private var fullBandwidth = 0.0
    private var fullBandwidthRounds = 0
    private var lossEventsInRound = 0
    private var cycleStart = ConduitInstant.zero
    private var probeWaitNanoseconds: Int64 = 0
    private var roundsSinceProbe = 0
    private var phaseStartRound = 0
    private var probeUpStep = 0
    private var probeRttDone: ConduitInstant?
    private var probeRttRoundDone = false
    private var windowBeforeProbeRtt = 0
    /// A deterministic generator for the 2–3 s probe wait (the engine has no randomness source).
    private var random: UInt64 = 0x9E37_79B9_7F4A_7C15
    private var recoveryStartTime: ConduitInstant?
    private var unrefutedLosses = 0
    /// `inflight_hi` before the latest loss episode lowered it, while that may still be undone.
    private var inflightHighBeforeEpisode: Int?
    /// The smallest RTT of the current round, and of the round before it.
    private var roundMinRtt: Int64 = .max
    private var lastRoundMinRtt: Int64 = .max
    /// The window the shared queue allows (FAST TCP's update, see `updateQueueBound`); `Int.max`
    /// while the flow finds no standing queue, probes or measures the RTT.
    public private(set) var queueBound = Int.max
    /// Whether the flow found a standing queue after draining its own, or could not drain it in a
    /// whole ProbeBW cycle (so other flows hold it): the queue bound applies only then, until a
    /// drain shows the queue gone.
    public private(set) var sharesQueue = false
    /// The round whose RTTs tell whether a queue outlasted the flow's drain: its packets were
    /// all sent after the drain ended.
    private var queueCheckRound: Int?

    /// A controller in Startup with RFC 9002's initial window.
    public init(maxDatagramSize: Int) {
        precondition(maxDatagramSize > 0)
        self.maxDatagramSize = maxDatagramSize
        window = NewRenoCongestionControl.initialWindow(maxDatagramSize: maxDatagramSize)
    }

    /// The bottleneck bandwidth estimate (`BBR.max_bw`), in bytes per second.
    public var bandwidthBytesPerSecond: Int { Int(bandwidth * 1e9) }
    /// The pacing gain of the current state.
    public var currentPacingGain: Double { pacingGain }

    /// `BBRMinPipeCwnd`: four packets.
    public var minimumWindow: Int { 4 * maxDatagramSize }

    /// The packet size changed (path MTU discovery): the window counts in the new size, never
    /// below four packets, nor below RFC 9002's initial window until Startup filled the pipe
    /// (a window smaller than one packet would never let one go).
    public mutating func maxDatagramSizeChanged(to size: Int) {
        precondition(size > 0)
        maxDatagramSize = size
        if !filledPipe { window = max(window, NewRenoCongestionControl.initialWindow(maxDatagramSize: size)) }
        window = max(window, minimumWindow)
    }

    var bandwidth: Double { max(currentCycleBandwidth, previousCycleBandwidth) }

    /// One bandwidth-delay product times `gain`, in bytes; nil before the model has both halves.
    func bdp(gain: Double = 1) -> Int? {
        guard bandwidth > 0, minRttNanoseconds != .max else { return nil }
        return Int(gain * bandwidth * Double(minRttNanoseconds))
    }

    func allows(bytes: Int) -> Bool { bytesInFlight + bytes <= window }
    var slowStartThreshold: Int { Int.max }
    mutating func onPacketSent(bytes: Int) { bytesInFlight += bytes }
    mutating func onPacketRemovedFromFlight(bytes: Int) { bytesInFlight = max(0, bytesInFlight - bytes) }
    mutating func onPacketAcked(bytes: Int, sentAt: ConduitInstant, isAppLimited: Bool) {
        bytesInFlight = max(0, bytesInFlight - bytes)
    }

    func pacingRate(smoothedRttNanoseconds: Int64) -> Double {
        if filledPipe { return pacingRateValue }
        // BBRInitPacingRate: the initial window over the RTT at Startup's gain, which Startup's
        // rate only rises from (so a sender that was app-limited starts a burst no slower).
        let initial = NewRenoCongestionControl.initialWindow(maxDatagramSize: maxDatagramSize)
        return max(pacingRateValue, Self.startupPacingGain * Double(initial) / Double(max(smoothedRttNanoseconds, LinkTime.millisecond)))
    }

    // MARK: Per ACK

    /// BBRUpdateOnACK: the model, the state machine, then the pacing rate and the window.
    mutating func onAckProcessed(_ sample: LinkRateSample, now: ConduitInstant) {
        updateRound(sample)
        if sample.deliveryRate > 0, sample.deliveryRate >= bandwidth || !sample.isAppLimited {
            currentCycleBandwidth = max(currentCycleBandwidth, sample.deliveryRate)
        }
        updateMinRtt(sample.rttNanoseconds, now: now)
        if sample.rttNanoseconds > 0 { roundMinRtt = min(roundMinRtt, sample.rttNanoseconds) }
        if isRoundStart {
            if let check = queueCheckRound, roundCount > check {
                // With hysteresis: a flow alone drains the queue to nearly nothing.
                if queueingDelay(above: 1) { sharesQueue = true } else if !queueingDelay(above: 0.5) { sharesQueue = false }
                queueCheckRound = nil
            }
            updateQueueBound()
            lastRoundMinRtt = roundMinRtt
            roundMinRtt = .max
        }
        let tooHigh = Double(sample.lost) > Self.lossThreshold * Double(max(sample.inFlightAtSend, 1))
        switch state {
        case .startup:
            checkStartupDone(sample, lossTooHigh: tooHigh, now: now)
        case .drain:
            if let bdp = bdp(), bytesInFlight <= bdp { startProbeDown(now: now) }
        case .probeBandwidthDown:
            if isTimeToProbe(now: now) {
                // Pacing below the estimate for a whole cycle did not drain the flight: others hold the queue.
                sharesQueue = true
                startRefill()
            } else if let bdp = bdp(), bytesInFlight <= min(bdp, inflightWithHeadroom) {
                state = .probeBandwidthCruise
                pacingGain = 1
                queueCheckRound = roundCount + 2
            }
        case .probeBandwidthCruise:
            if isTimeToProbe(now: now) { startRefill() }
        case .probeBandwidthRefill:
            if tooHigh { lowerInflightHigh(sample, now: now) } else if roundCount > phaseStartRound { startProbeUp() }
        case .probeBandwidthUp:
            updateProbeUp(sample, lossTooHigh: tooHigh, now: now)
        case .probeRTT:
            updateProbeRtt(now: now)
        }
        if state != .probeRTT, probeRttExpired { enterProbeRtt() }
        if isRoundStart { lossEventsInRound = 0 }
        setPacingRate()
        setWindow(sample)
    }

    /// BBRUpdateRound: a round ends when a packet sent after the previous round ended is acknowledged.
    private mutating func updateRound(_ sample: LinkRateSample) {
        isRoundStart = false
        guard sample.priorDelivered >= nextRoundDelivered else { return }
        nextRoundDelivered = sample.totalDelivered
        roundCount += 1
        roundsSinceProbe += 1
        isRoundStart = true
    }

    /// BBRUpdateMinRTT: `probe_rtt_min_delay` over 5 s, `min_rtt` over 10 s.
    private mutating func updateMinRtt(_ rtt: Int64, now: ConduitInstant) {
        probeRttExpired = LinkTime.elapsed(from: probeRttMinStamp, to: now) > Self.probeRttInterval
        if rtt > 0, rtt < probeRttMinNanoseconds || probeRttExpired {
            probeRttMinNanoseconds = rtt
            probeRttMinStamp = now
        }
        let minRttExpired = LinkTime.elapsed(from: minRttStamp, to: now) > Self.minRttWindow
        if probeRttMinNanoseconds < minRttNanoseconds || minRttExpired {
            minRttNanoseconds = probeRttMinNanoseconds
            minRttStamp = probeRttMinStamp
        }
    }

    /// BBRCheckStartupFullBandwidth and BBRCheckStartupHighLoss.
    private mutating func checkStartupDone(_ sample: LinkRateSample, lossTooHigh: Bool, now: ConduitInstant) {
        if isRoundStart, !sample.isAppLimited {
            if bandwidth >= fullBandwidth * 1.25 {
                fullBandwidth = bandwidth
                fullBandwidthRounds = 0
            } else {
                fullBandwidthRounds += 1
                if fullBandwidthRounds >= 3 { filledPipe = true }
            }
        }
        if lossTooHigh, lossEventsInRound >= Self.fullLossCount {
            filledPipe = true
            lowerInflightHigh(sample, now: now)
        }
        guard filledPipe else { return }
        state = .drain
        pacingGain = Self.drainPacingGain
        windowGain = Self.startupWindowGain
    }

    /// How far `inflight_hi` may fall on loss: β times the window target (see the type's notes).
    private var inflightHighFloor: Int {
        guard let bdp = bdp(gain: Self.windowGain) else { return minimumWindow }
        return max(Int(Self.beta * Double(bdp)), minimumWindow)
    }

    /// `BBRInflightWithHeadroom`: below `inflight_hi`, room for other flows.
    private var inflightWithHeadroom: Int {
        guard inflightHigh != .max else { return .max }
        return max(inflightHigh - Int(Self.headroom * Double(inflightHigh)), minimumWindow)
    }

    /// BBRHandleInflightTooHigh: the loss rate passed the threshold while probing.
    private mutating func lowerInflightHigh(_ sample: LinkRateSample, now: ConduitInstant) {
        if inflightHighBeforeEpisode == nil { inflightHighBeforeEpisode = inflightHigh }
        inflightHigh = max(sample.inFlightAtSend, inflightHighFloor)
        if state == .probeBandwidthUp || state == .probeBandwidthRefill { startProbeDown(now: now) }
    }

    /// Once a round, outside probing, in a flow that shares its queue (`sharesQueue`): if even the
    /// round's smallest RTT found a standing queue, the window moves halfway towards FAST TCP's
    /// target, `window × min_rtt / RTT + α` (Wei, Jin, Low and Hegde, "FAST TCP: Motivation,
    /// Architecture, Algorithms, Performance", IEEE/ACM ToN 14(6), 2006). Each flow then keeps α bytes queued whatever its rate, which gives flows through one
    /// bottleneck equal rates. BBR's own window (two BDPs of a max-filtered bandwidth) has no such
    /// pull: flows with a standing queue hold any split they reach. A deviation from BBRv3, which
    /// evens out shares through `bw_lo`/`inflight_lo` on loss and so not with a deep buffer.
    private mutating func updateQueueBound() {
        guard sharesQueue, state == .probeBandwidthDown || state == .probeBandwidthCruise || state == .probeBandwidthRefill, hasStandingQueue else {
            queueBound = .max
            return
        }
        let current = Double(min(window, queueBound))
        let fast = current * Double(minRttNanoseconds) / Double(roundMinRtt) + Double(Self.queueSharePackets * maxDatagramSize)
        queueBound = max(Int(0.5 * current + 0.5 * fast), minimumWindow)
    }

    /// Even the smallest RTT of the round so far exceeds `min_rtt` by the standing-queue fraction (1 ms at least).
    private var hasStandingQueue: Bool { queueingDelay(above: 1) }

    /// Whether the smallest RTT of the round so far exceeds `min_rtt` by more than `scale` times the standing-queue threshold.
    private func queueingDelay(above scale: Double) -> Bool {
        guard minRttNanoseconds != .max, roundMinRtt != .max else { return false }
        let threshold = max(Self.standingQueueFraction * Double(minRttNanoseconds), Double(LinkTime.millisecond))
        return Double(roundMinRtt - minRttNanoseconds) > scale * threshold
    }

    // MARK: ProbeBW

    private mutating func startProbeDown(now: ConduitInstant) {
        state = .probeBandwidthDown
        pacingGain = 0.9
        windowGain = Self.windowGain
        cycleStart = now
        roundsSinceProbe = 0
        // The filter keeps this cycle's and the previous cycle's largest sample.
        previousCycleBandwidth = currentCycleBandwidth
        currentCycleBandwidth = 0
        random ^= random << 13
        random ^= random >> 7
        random ^= random << 17
        probeWaitNanoseconds = 2_000 * LinkTime.millisecond + Int64(random % UInt64(1_000 * LinkTime.millisecond))
    }

    /// BBRIsTimeToProbeBW: the wall-clock wait, or as many rounds as Reno would take to use one
    /// more BDP (capped at 63), whichever is first.
    private func isTimeToProbe(now: ConduitInstant) -> Bool {
        if LinkTime.elapsed(from: cycleStart, to: now) >= probeWaitNanoseconds { return true }
        let renoRounds = min((bdp() ?? 0) / maxDatagramSize, 63)
        return roundsSinceProbe >= max(renoRounds, 1)
    }

    private mutating func startRefill() {
        state = .probeBandwidthRefill
        pacingGain = 1
        windowGain = Self.windowGain
        phaseStartRound = roundCount
    }

    private mutating func startProbeUp() {
        stopQueueBound()
        state = .probeBandwidthUp
        pacingGain = 1.25
        windowGain = Self.probeUpWindowGain
        phaseStartRound = roundCount
        probeUpStep = maxDatagramSize
    }

    /// ProbeBW_UP: raise `inflight_hi` by a step that doubles each round while the loss rate stays
    /// under the threshold; leave once a round has passed with 1.25 BDP in flight, or on high loss.
    private mutating func updateProbeUp(_ sample: LinkRateSample, lossTooHigh: Bool, now: ConduitInstant) {
        if lossTooHigh {
            lowerInflightHigh(sample, now: now)
            return
        }
        if isRoundStart, inflightHigh != .max {
            inflightHigh += probeUpStep
            probeUpStep = min(probeUpStep * 2, 1 << 30)
        }
        if roundCount > phaseStartRound, let target = bdp(gain: 1.25), bytesInFlight >= target {
            startProbeDown(now: now)
        }
    }

    /// Probing or measuring the RTT: the bound lifts; whether the queue is shared is checked again after the next drain.
    private mutating func stopQueueBound() {
        queueBound = .max
        queueCheckRound = nil
    }

    // MARK: ProbeRTT

    private var probeRttWindow: Int { max(bdp(gain: 0.5) ?? minimumWindow, minimumWindow) }

    private mutating func enterProbeRtt() {
        stopQueueBound()
        state = .probeRTT
        pacingGain = 1
        windowBeforeProbeRtt = max(windowBeforeProbeRtt, window)
        probeRttDone = nil
        probeRttRoundDone = false
    }

    /// BBRHandleProbeRTT: once the flight is down to half a BDP, hold it 200 ms and a round.
    private mutating func updateProbeRtt(now: ConduitInstant) {
        guard let done = probeRttDone else {
            if bytesInFlight <= probeRttWindow {
                probeRttDone = LinkTime.add(now, Self.probeRttDuration)
                phaseStartRound = roundCount
            }
            return
        }
        if roundCount > phaseStartRound { probeRttRoundDone = true }
        guard probeRttRoundDone, now >= done else { return }
        probeRttMinStamp = now
        probeRttExpired = false
        window = max(window, windowBeforeProbeRtt)
        windowBeforeProbeRtt = 0
        if filledPipe {
            // No check of the queue here: flows tend to measure the RTT together, so the queue
            // looks empty after it even when shared.
            startProbeDown(now: now)
            state = .probeBandwidthCruise
            pacingGain = 1
        } else {
            state = .startup
            pacingGain = Self.startupPacingGain
            windowGain = Self.startupWindowGain
        }
    }

    // MARK: Rate and window

    /// BBRSetPacingRateWithGain: below the estimate by a 1 % margin; in Startup it only rises.
    private mutating func setPacingRate() {
        guard bandwidth > 0 else { return }
        var rate = pacingGain * bandwidth * (1 - Self.pacingMargin)
        if queueBound != .max, lastRoundMinRtt != .max, state != .probeBandwidthDown {
            rate = max(rate, Self.queueBoundPacingGain * Double(queueBound) / Double(lastRoundMinRtt))
        }
        if filledPipe || rate > pacingRateValue { pacingRateValue = rate }
    }

    /// BBRSetCwnd and BBRBoundCwndForModel: grow towards the gain times the BDP (plus three
    /// packets for batching), bounded by `inflight_hi` (with headroom in CRUISE and ProbeRTT).
    private mutating func setWindow(_ sample: LinkRateSample) {
        let initial = NewRenoCongestionControl.initialWindow(maxDatagramSize: maxDatagramSize)
        let target = (bdp(gain: windowGain) ?? initial) + 3 * maxDatagramSize
        if filledPipe {
            window = min(window + sample.newlyAcked, target)
        } else if window < target || sample.totalDelivered < initial {
            window += sample.newlyAcked
        }
        switch state {
        case .probeBandwidthCruise: window = min(window, inflightWithHeadroom, queueBound)
        case .probeRTT: window = min(window, inflightWithHeadroom, probeRttWindow)
        case .probeBandwidthDown, .probeBandwidthRefill: window = min(window, inflightHigh, queueBound)
        case .probeBandwidthUp: window = min(window, inflightHigh)
        case .startup, .drain: break
        }
        window = max(window, minimumWindow)
    }

    // MARK: Loss

    func isInRecovery(sentAt: ConduitInstant) -> Bool {
        recoveryStartTime.map { sentAt <= $0 } ?? false
    }

    /// Counts the losses towards this round's loss events, and starts a loss episode when the
    /// latest lost packet was sent after the current one started.
    mutating func onCongestionEvent(sentAt: ConduitInstant, now: ConduitInstant, lostPackets: Int) -> Bool {
        lossEventsInRound += 1
        if isInRecovery(sentAt: sentAt) {
            unrefutedLosses += lostPackets
            return false
        }
        recoveryStartTime = now
        unrefutedLosses = lostPackets
        inflightHighBeforeEpisode = nil
        congestionEvents += 1
        return true
    }

    /// Once every loss of the latest episode proved spurious, the cap it lowered is restored.
    mutating func onSpuriousLoss(event: Int) -> Bool {
        guard event == congestionEvents, unrefutedLosses > 0 else { return false }
        unrefutedLosses -= 1
        guard unrefutedLosses == 0 else { return false }
        recoveryStartTime = nil
        congestionEventsUndone += 1
        if let before = inflightHighBeforeEpisode {
            inflightHigh = max(inflightHigh, before)
            inflightHighBeforeEpisode = nil
        }
        return true
    }

    /// The path changed beyond the model: discard it and start again from Startup, from the
    /// minimum window (as BBR does after a retransmission timeout).
    mutating func onPersistentCongestion() {
        persistentCongestionEvents += 1
        state = .startup
        pacingGain = Self.startupPacingGain
        windowGain = Self.startupWindowGain
        filledPipe = false
        fullBandwidth = 0
        fullBandwidthRounds = 0
        currentCycleBandwidth = 0
        previousCycleBandwidth = 0
        pacingRateValue = 0
        inflightHigh = .max
        inflightHighBeforeEpisode = nil
        stopQueueBound()
        sharesQueue = false
        window = minimumWindow
    }
}

extension BBRCongestionControl: CongestionController {}
