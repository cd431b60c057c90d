import Foundation

/// What was typed, read: times, durations, volumes and paths. Nil when the text is not one; the command says what
/// it takes.
enum Parse {
    /// "90", "1.5", "1:30", "1:02:03", with an optional sign → microseconds.
    static func time(_ text: String) -> Int64? {
        var body = Substring(text)
        var sign: Double = 1
        if body.first == "+" { body = body.dropFirst() } else if body.first == "-" { sign = -1; body = body.dropFirst() }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for part in parts {
            guard let value = Double(part), value.isFinite, value >= 0 else { return nil }
            total = total * 60 + value
        }
        let microseconds = sign * total * 1_000_000
        guard microseconds.magnitude < 9e18 else { return nil }
        return Int64(microseconds.rounded())
    }

    /// A move: a time with its sign, "+30", "-15", "+1:30" → microseconds.
    static func offset(_ text: String) -> Int64? {
        guard text.first == "+" || text.first == "-" else { return nil }
        return time(text)
    }

    /// A place from the start: a time, not below 0 → microseconds.
    static func position(_ text: String) -> Int64? {
        time(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// "20m", "1h30m", "90s", "1h", "45" (minutes) → microseconds.
    static func duration(_ text: String) -> Int64? {
        if let minutes = Double(text), minutes.isFinite, minutes > 0, minutes < 10_000 { return Int64(minutes * 60_000_000) }
        var total = 0.0
        var number = ""
        for character in text.lowercased() {
            if character.isNumber || character == "." { number.append(character); continue }
            guard let value = Double(number), value.isFinite else { return nil }
            switch character {
            case "h": total += value * 3600
            case "m": total += value * 60
            case "s": total += value
            default: return nil
            }
            number = ""
        }
        guard number.isEmpty, total > 0, total < 1_000_000 else { return nil }
        return Int64(total * 1_000_000)
    }

    /// "0.5", or a percentage "150%" → 0 (silent) to 10, 1 being full volume.
    static func volume(_ text: String) -> Double? {
        let percent = text.hasSuffix("%")
        guard let number = Double(percent ? String(text.dropLast()) : text), case let volume = percent ? number / 100 : number,
              volume.isFinite, volume >= 0, volume <= 10 else { return nil }
        return volume
    }

    /// A path (relative to the working directory) or a URI, as a URI.
    static func uri(_ target: String) -> String {
        if target.contains("://") { return target }
        return absolute(target).absoluteString
    }

    /// A path, relative to the working directory or not, as an absolute one.
    static func path(_ path: String) -> String { absolute(path).path }

    private static func absolute(_ path: String) -> URL {
        URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL
    }
}
