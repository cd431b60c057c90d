import Foundation

/// Times as they are printed.
enum Clock {
    /// Microseconds as "m:ss", or "h:mm:ss" from an hour; below 0 as 0:00.
    static func format(_ microseconds: Int64) -> String {
        let total = max(0, microseconds / 1_000_000)
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }

    /// Microseconds as "m:ss", or "?" when not known.
    static func format(_ microseconds: Int64?) -> String { microseconds.map(format) ?? "?" }
}

extension Clock {
    /// Microseconds as seconds with six decimals, "1.500000": what files lectern writes (CSV, Audacity labels) hold.
    static func seconds(_ microseconds: Int64) -> String { String(format: "%.6f", Double(microseconds) / 1e6) }

    /// Microseconds since the epoch as ISO 8601 in the local time zone, "2024-03-01T21:14:03+01:00".
    static func localDate(_ microseconds: Int64) -> String {
        localDates.string(from: Date(timeIntervalSince1970: Double(microseconds) / 1e6))
    }

    /// One formatter for every date (thread-safe, as Foundation documents it).
    nonisolated(unsafe) private static let localDates = {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = .current
        return formatter
    }()
}
