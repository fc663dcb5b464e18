/// Every fuzz target, by name.
public enum FuzzTargets {
    /// The targets this build has (`dcep` needs the `SCTP` trait, `zlib-inflate` the `Zlib` trait).
    public static let all: [FuzzTarget] = {
        var targets = [coreFrame, relayEnvelope, roomControl, trackFrame, channelFrame, invitation, arqPacket, udpDatagram, relayToken, relayCluster, relayRoster, arqEngine, callMachine, conferenceMachine, relayMachine, udpListener]
        #if SCTP
        targets.append(dcep)
        #endif
        #if Zlib
        targets.append(zlibInflate)
        #endif
        return targets
    }()

    /// Targets left out of this build by its traits (their corpora stay in `Fuzz/corpus`).
    public static let leftOutByTraits: [String] = {
        var names: [String] = []
        #if !SCTP
        names.append("dcep")
        #endif
        #if !Zlib
        names.append("zlib-inflate")
        #endif
        return names
    }()

    /// The target called `name`, if this build has it.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}
