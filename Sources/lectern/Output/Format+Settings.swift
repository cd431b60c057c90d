import Foundation
import LecternClient

// A book's sound settings as `lectern loudness`, `compressor`, `skip-parts` and `skip-silence` show them.
extension Format {
    /// "normalisation on: -23.1 LUFS, +5.1 dB", or what is known of its loudness.
    static func loudness(_ book: BookDetails) -> String {
        let measured: String
        if let loudness = book.loudness {
            measured = String(format: "%.1f LUFS", loudness)
        } else if let problem = book.loudnessProblem {
            measured = "not measurable (\(problem)): unity gain"
        } else {
            measured = "not measured yet"
        }
        let target = book.loudnessTarget.map { String(format: " to %.0f LUFS", $0) } ?? ""
        return "normalisation \(book.normalise ? "on" : "off"): \(measured)"
            + (book.normalise && book.loudnessGain != 0 ? String(format: ", %+.1f dB", book.loudnessGain) + target : "")
    }

    /// "compressor on" or "compressor off".
    static func compressor(_ book: BookDetails) -> String { "compressor \(book.compress ? "on" : "off")" }

    /// "skipping the first 12 s and the last 8 s of every file", or "off: files play whole".
    static func skipParts(_ book: BookDetails) -> String {
        let (intro, outro) = (book.skipIntro, book.skipOutro)
        guard intro > 0 || outro > 0 else { return "off: files play whole" }
        let parts = [intro > 0 ? "the first \(seconds(intro))" : nil, outro > 0 ? "the last \(seconds(outro))" : nil]
        return "skipping " + parts.compactMap { $0 }.joined(separator: " and ") + " of every file"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    /// "on: pauses over 0.5 s shortened by 75 % of the rest", or "off (when on: ...)".
    static func skipSilence(_ book: BookDetails) -> String {
        let how = String(format: "pauses over %.1f s shortened by %.0f %% of the rest", book.silenceThreshold, book.silenceAmount * 100)
        return book.skipSilence ? "on: \(how)" : "off (when on: \(how))"
    }
}

// lecternd's settings as `lectern config` shows them.
extension Format {
    /// A line a setting: its key, value and source, in columns (values longer than 40 characters push their source
    /// out).
    static func settings(_ values: [SettingValue]) -> String {
        let keyWidth = values.map(\.key.count).max() ?? 0
        let valueWidth = min(values.map(\.value.count).max() ?? 0, 40)
        return values.map { setting in
            setting.key.padding(toLength: keyWidth, withPad: " ", startingAt: 0) + "  "
                + (setting.value.count < valueWidth ? setting.value.padding(toLength: valueWidth, withPad: " ", startingAt: 0) : setting.value)
                + "  " + setting.source
        }.joined(separator: "\n")
    }
}
