/// `conduit bench --chart FILE`: a bar chart of throughput (median MB/s, with the min–max spread
/// as a whisker) per message size, one bar per transport and session type and, with
/// `--reference`, per reference. Plain SVG text, no dependencies.
///
/// ```
///  MB/s
///   |      ▇                 ▇
///   |  ▇   ▇   ▇         ▇   ▇   ▇
///   +--1 KiB-------------16 KiB-------  one group per size, one colour per series
/// ```
package enum BenchChart {
    /// One bar series: a label and its (median, min, max) per size.
    struct Series {
        var label: String
        var values: [Int: BenchSpread]
    }

    static let palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]

    package static func svg(_ report: BenchJob.Report) -> String {
        var series: [Series] = []
        for cell in report.cells {
            let label = "\(cell.transport) \(cell.type)"
            if let index = series.firstIndex(where: { $0.label == label }) {
                series[index].values[cell.size] = cell.megabytesPerSecond
            } else {
                series.append(Series(label: label, values: [cell.size: cell.megabytesPerSecond]))
            }
        }
        let sizes = Array(Set(report.cells.map(\.size))).sorted()
        var tsctp = Series(label: "usrsctp tsctp (debug off)", values: [:])
        for reference in report.references where reference.name == "tsctp" { tsctp.values[reference.size] = reference.megabytesPerSecond }
        if !tsctp.values.isEmpty { series.append(tsctp) }
        var tcp = Series(label: "iperf3 (kernel TCP)", values: [:])
        for reference in report.references where reference.name == "iperf3" { tcp.values[reference.size] = reference.megabytesPerSecond }
        if !tcp.values.isEmpty { series.append(tcp) }
        if let blast = report.references.first(where: { $0.name == "udp-blast" }) {
            // The blast does not depend on the message size: the same bar in every group.
            series.append(Series(label: "UDP blast, \(blast.size)-byte datagrams", values: Dictionary(uniqueKeysWithValues: sizes.map { ($0, blast.megabytesPerSecond) })))
        }
        return render(series: series, sizes: sizes)
    }

    static func render(series: [Series], sizes: [Int]) -> String {
        let bar = 22.0, gap = 30.0, left = 70.0, top = 40.0, plotHeight = 300.0
        let groupWidth = Double(max(1, series.count)) * bar + gap
        let width = max(520, left + Double(max(1, sizes.count)) * groupWidth + 20)  // room for the legend
        let legendTop = top + plotHeight + 50
        let height = legendTop + Double(series.count) * 18 + 10
        let peak = series.flatMap { $0.values.values.map(\.max) }.max() ?? 0
        let scale = niceCeiling(peak)
        func y(_ value: Double) -> Double { top + plotHeight - (scale > 0 ? value / scale * plotHeight : 0) }

        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(format(width))" height="\(format(height))" \
            viewBox="0 0 \(format(width)) \(format(height))" font-family="sans-serif" font-size="12">
            <title>conduit bench: throughput per message size</title>
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(format(left))" y="20" font-size="14">Throughput, median MB/s (whiskers: min–max)</text>

            """
        for step in 0...4 {
            let value = scale * Double(step) / 4
            out += "<line x1=\"\(format(left))\" y1=\"\(format(y(value)))\" x2=\"\(format(width - 20))\" y2=\"\(format(y(value)))\" stroke=\"#ddd\"/>\n"
            out += "<text x=\"\(format(left - 6))\" y=\"\(format(y(value) + 4))\" text-anchor=\"end\">\(format(value))</text>\n"
        }
        for (group, size) in sizes.enumerated() {
            let x0 = left + Double(group) * groupWidth + gap / 2
            for (index, item) in series.enumerated() {
                guard let spread = item.values[size] else { continue }
                let x = x0 + Double(index) * bar
                let colour = palette[index % palette.count]
                out += "<rect class=\"bar\" x=\"\(format(x + 2))\" y=\"\(format(y(spread.median)))\" width=\"\(format(bar - 4))\" height=\"\(format(top + plotHeight - y(spread.median)))\" fill=\"\(colour)\">"
                out += "<title>\(escape(item.label)), \(size) B: \(format(spread.median)) MB/s</title></rect>\n"
                out += "<line x1=\"\(format(x + bar / 2))\" y1=\"\(format(y(spread.min)))\" x2=\"\(format(x + bar / 2))\" y2=\"\(format(y(spread.max)))\" stroke=\"black\"/>\n"
            }
            out += "<text x=\"\(format(x0 + Double(series.count) * bar / 2))\" y=\"\(format(top + plotHeight + 18))\" text-anchor=\"middle\">\(sizeLabel(size))</text>\n"
        }
        out += "<line x1=\"\(format(left))\" y1=\"\(format(top + plotHeight))\" x2=\"\(format(width - 20))\" y2=\"\(format(top + plotHeight))\" stroke=\"black\"/>\n"
        out += "<text x=\"\(format(left))\" y=\"\(format(top + plotHeight + 36))\">message size</text>\n"
        for (index, item) in series.enumerated() {
            let rowY = legendTop + Double(index) * 18
            out += "<rect x=\"\(format(left))\" y=\"\(format(rowY - 10))\" width=\"12\" height=\"12\" fill=\"\(palette[index % palette.count])\"/>"
            out += "<text x=\"\(format(left + 18))\" y=\"\(format(rowY))\">\(escape(item.label))</text>\n"
        }
        return out + "</svg>\n"
    }

    /// 1, 2 or 5 times a power of ten, at least `value` (the axis maximum).
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 1 }
        var power = 1.0
        while power * 10 <= value { power *= 10 }
        while power > value { power /= 10 }
        for factor in [1.0, 2, 5, 10] where factor * power >= value { return factor * power }
        return 10 * power
    }

    static func sizeLabel(_ size: Int) -> String {
        size >= 1_024 && size % 1_024 == 0 ? "\(size / 1_024) KiB" : "\(size) B"
    }

    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
