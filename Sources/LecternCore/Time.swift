import Foundation

extension Duration {
    /// As a listener reads a time: "1:02:03", "2:03", "0:05", with tenths when it has them ("0:05.5"); a minus sign
    /// before a negative one.
    public var clock: String {
        let tenths = Int64((Double(microseconds.magnitude) / 100_000).rounded())
        let seconds = tenths / 10, rest = tenths % 10
        let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        var text = h > 0 ? String(format: "%lld:%02lld:%02lld", h, m, s) : String(format: "%lld:%02lld", m, s)
        if rest > 0 { text += ".\(rest)" }
        return (microseconds < 0 ? "-" : "") + text
    }

    /// Whole microseconds, the unit of MPRIS positions and of the library's offsets.
    public var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
