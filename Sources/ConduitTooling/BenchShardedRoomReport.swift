/// What `conduit bench --room --in-process` measured (`--json`: the last line).
package struct BenchShardedRoomReport: Sendable, Codable, Hashable {
    /// Always "in-process": the relay shards, the bus between them and the synthetic members
    /// share this process and its CPUs (see ``BenchShardedRoom``).
    package var mode = "in-process"
    package var senders: Int
    package var receivers: Int
    package var messagesPerSender: Int
    package var size: Int
    /// Every run, in the order they ran (thread counts alternating).
    package var runs: [Run] = []
    /// Per thread count: medians and min-max over its runs, and its ratio to the first count's.
    package var byThreads: [Summary] = []

    package init(senders: Int, receivers: Int, messagesPerSender: Int, size: Int) {
        self.senders = senders
        self.receivers = receivers
        self.messagesPerSender = messagesPerSender
        self.size = size
    }

    /// One run of the room on one relay (`threads` shards).
    package struct Run: Sendable, Codable, Hashable {
        package var threads: Int
        /// Deliveries expected: senders × messages × receivers.
        package var expected: Int
        package var delivered = 0
        package var duplicates = 0
        package var outOfOrder = 0
        package var missing = 0
        /// Frames a receiver got that were not a synthetic sender's (or from no known sender).
        package var malformed = 0
        /// From the senders' first write to the last in-order delivery.
        package var elapsedSeconds = 0.0
        package var forwardedMessagesPerSecond = 0.0
        package var forwardedBytesPerSecond = 0.0
        /// This process's user plus system CPU over the same interval: the relay's shards and bus,
        /// and the synthetic members (lightweight, but on the same CPUs), per forwarded message.
        package var cpuSeconds = 0.0
        package var cpuMicrosPerForwardedMessage = 0.0
        /// Frames that crossed to another shard (each once per other shard with members of the
        /// room), and those the in-process bus dropped or the receiving shard found missing.
        package var crossShardFrames = 0
        package var crossShardLost = 0
        /// Times a shard stopped reading a sender because one of its receivers was full.
        package var sendersPaused = 0
        /// "complete", or what went wrong.
        package var ended = ""

        package init(threads: Int, expected: Int) {
            self.threads = threads
            self.expected = expected
        }

        /// Every receiver got every message of every sender exactly once, in order.
        package var isComplete: Bool { delivered == expected && missing == 0 && duplicates == 0 && outOfOrder == 0 && malformed == 0 }
    }

    /// One thread count's runs together.
    package struct Summary: Sendable, Codable, Hashable {
        package var threads: Int
        package var runs: Int
        package var forwardedMessagesPerSecond: BenchSpread
        package var cpuMicrosPerForwardedMessage: BenchSpread
        /// Median forwarded messages/s over the first thread count's median (1 for the first).
        package var ratioToFirst: Double
        /// Each round's run over the first thread count's run of the same round (they ran one
        /// after the other, so a change in the machine's load touches both): median and min-max.
        package var ratioToFirstPerRound: BenchSpread?
    }

    /// Every run complete.
    package var isComplete: Bool { runs.allSatisfy(\.isComplete) }

    /// Fills ``byThreads`` from ``runs``, in the order of `threads`.
    package mutating func summarize(threads: [Int]) {
        byThreads = []
        var first: Double?
        let firstRuns = runs.filter { $0.threads == threads.first }
        for count in threads {
            let mine = runs.filter { $0.threads == count }
            guard let rate = BenchSpread(mine.map(\.forwardedMessagesPerSecond)),
                let cpu = BenchSpread(mine.map(\.cpuMicrosPerForwardedMessage))
            else { continue }
            let baseline = first ?? rate.median
            first = baseline
            // The runs of one round are the same index in each thread count's list.
            let perRound = zip(mine, firstRuns).compactMap { run, reference in
                reference.forwardedMessagesPerSecond > 0 ? run.forwardedMessagesPerSecond / reference.forwardedMessagesPerSecond : nil
            }
            byThreads.append(Summary(threads: count, runs: mine.count, forwardedMessagesPerSecond: rate, cpuMicrosPerForwardedMessage: cpu,
                                     ratioToFirst: baseline > 0 ? rate.median / baseline : 0, ratioToFirstPerRound: BenchSpread(perRound)))
        }
    }
}
