import Foundation

extension Duration {
    /// As a listener reads a time, in whole seconds: "1:02:03" from an hour, else "2:03", "0:05"; a minus sign
    /// before a negative one.
    public var clock: String {
        let seconds = microseconds.magnitude / 1_000_000
        let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60)
        let text = h > 0 ? String(format: "%llu:%02llu:%02llu", h, m, s) : String(format: "%llu:%02llu", m, s)
        return (microseconds < 0 ? "-" : "") + text
    }

    /// Whole microseconds, the unit of MPRIS positions and of the library's offsets.
    public var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
