import DBus
import Foundation
import Testing
import TestSupport

/// PCM WAV files as sample arrays: written and read by the gapless test.
enum PCM {
    static let rate = 44_100

    /// A continuous 440 Hz sine of `count` samples starting at sample `offset` (so that two pieces join
    /// without a step), at 0.5 full scale.
    static func sine(_ count: Int, from offset: Int) -> [Int16] {
        (offset..<offset + count).map { Int16(16_383 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
    }

    /// A mono 16-bit WAV file of `samples`.
    static func wav(_ samples: [Int16]) -> Data {
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + samples.count * 2)); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1); u32(UInt32(rate)); u32(UInt32(rate * 2)); u16(2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(UInt32(samples.count * 2))
        for sample in samples { withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) } }
        return data
    }

    /// The samples of a mono 16-bit WAV file (its "data" chunk; to the end of the file when the chunk's size
    /// was never written).
    static func samples(ofWAV data: Data) throws -> [Int16] {
        let bytes = [UInt8](data)
        guard bytes.count >= 12, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF" else { throw FixtureError("not a WAV file") }
        var at = 12
        while at + 8 <= bytes.count {
            let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
            let size = Int(UInt32(bytes[at + 4]) | UInt32(bytes[at + 5]) << 8 | UInt32(bytes[at + 6]) << 16 | UInt32(bytes[at + 7]) << 24)
            if id == "data" {
                let end = size == 0 || at + 8 + size > bytes.count ? bytes.count : at + 8 + size
                return stride(from: at + 8, to: end - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
            }
            at += 8 + size + (size & 1)
        }
        throw FixtureError("the WAV file has no data chunk")
    }
}

extension Integration {
    /// Gapless, measured: a two-file book rendered through a file sink comes out as the files' samples one
    /// after the other, nothing inserted or lost at the boundary.
    @Suite struct Gapless {
        @Test(arguments: ["wav", "flac"])
        func aTwoFileBookRendersWithoutAGap(_ format: String) async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-gapless")
            defer { folder.remove() }
            // 1.3 s + 0.9 s of one continuous sine, cut mid-wave.
            let first = PCM.sine(57_330, from: 0)
            let second = PCM.sine(39_690, from: 57_330)
            let book = folder.appending("book")
            try FileManager.default.createDirectory(at: book, withIntermediateDirectories: true)
            for (name, samples) in [("1", first), ("2", second)] {
                let wav = (format == "wav" ? book : folder.url).appendingPathComponent("\(name).wav")
                try PCM.wav(samples).write(to: wav)
                if format == "flac" {
                    try AudioFiles.gst("filesrc location=\(wav.path) ! wavparse ! audioconvert ! flacenc"
                                       + " ! filesink location=\(book.appendingPathComponent("\(name).flac").path)")
                }
            }
            let output = folder.appending("out.wav")
            let sink = "audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc"
                + " ! filesink location=\(output.path)"
            try await DaemonFixture.with(daemonArguments: ["--audio-sink", sink]) { d in
                try await d.openURI(book)
                // The file sink does not keep time: the whole book renders at once, then playback stops.
                #expect(try await d.waitForStatus("Stopped", timeout: .seconds(20)) == "Stopped")
            }
            let rendered = try PCM.samples(ofWAV: try Data(contentsOf: output))
            let expected = first + second
            let inserted = rendered.count - expected.count
            #expect(inserted == 0, "\(format): \(inserted) samples inserted (\(rendered.count) rendered, \(expected.count) in the files)")
            // Sample for sample, across the boundary.
            let boundary = first.count
            let window = max(0, boundary - 64)..<min(expected.count, boundary + 64)
            #expect(rendered.count >= window.upperBound && Array(rendered[window]) == Array(expected[window]),
                    "the samples around the boundary differ")
            #expect(rendered == expected)
        }
    }
}
