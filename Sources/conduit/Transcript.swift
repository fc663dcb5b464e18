/// Prints a readable, time-stamped account of what happened, one line per event.
actor Transcript {
    private let start = ContinuousClock.now
    private(set) var lines: [String] = []

    func say(_ who: String, _ text: String) {
        let elapsed = ContinuousClock.now - start
        let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        let stamp = String(ms).leftPadded(to: 5)
        let line = "[\(stamp) ms] \(who.padded(to: 5)) \(text)"
        lines.append(line)
        print(line)
    }
}

extension String {
    func padded(to width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
