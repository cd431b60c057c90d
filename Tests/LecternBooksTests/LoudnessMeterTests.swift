import Foundation
import GStreamer
import Logging
import Testing
import TestSupport
@testable import LecternBooks
@testable import LecternMedia

/// The loudness meter (libebur128 over GStreamer's decoders), against FFmpeg's own EBU R128 meter, and in the media
/// reader's child.
@Suite("Loudness meter")
struct LoudnessMeterTests {
    let folder: TemporaryDirectory

    init() throws {
        folder = try TemporaryDirectory(prefix: "lectern-loudness")
    }

    /// A tone file peaking at `peak`.
    func tone(_ name: String, seconds: Double = 3, peak: Double) throws -> URL {
        let url = folder.appending(name)
        try R128.tone(url, seconds: seconds, peak: peak)
        return url
    }

    @Test("a file's integrated loudness is FFmpeg's within 0.1 LU, and two files measure as one programme")
    func agreesWithFFmpeg() async throws {
        // Decoding and FFmpeg run off the cooperative pool: the test process's other suites need its two threads.
        let (pairs, both, reference, peak) = try await offThePool { [self] in
            let quiet = try tone("quiet.wav", peak: 0.05)
            let loud = try tone("loud.wav", peak: 0.5)
            let pairs = try [quiet, loud].map { file in
                (file.lastPathComponent, try Loudness.measure([file], timeout: .seconds(30)).integrated, try R128.integratedLoudness(of: file))
            }
            let concatenated = folder.appending("both.wav")
            try AudioFiles.ffmpeg(["-i", quiet.path, "-i", loud.path, "-filter_complex", "concat=n=2:v=0:a=1", concatenated.path])
            let both = try Loudness.measure([quiet, loud], timeout: .seconds(30)).integrated
            return (pairs, both, try R128.integratedLoudness(of: concatenated),
                    try Loudness.measure([loud], timeout: .seconds(30)).peak)
        }
        for (name, measured, reference) in pairs {
            let integrated = try #require(measured)
            #expect(abs(integrated - reference) <= 0.1, "\(name): \(integrated) against FFmpeg's \(reference)")
        }
        // Both files, one after the other, against FFmpeg on their concatenation.
        let measured = try #require(both)
        #expect(abs(measured - reference) <= 0.1, "\(measured) against FFmpeg's \(reference)")
        #expect(abs(peak - 0.5) < 0.01)
    }

    @Test("silence has no loudness; a damaged file and a timeout are errors that say why")
    func badInput() async throws {
        let silence = folder.appending("silence.wav")
        try AudioFiles.wavData([Int16](repeating: 0, count: 44_100 * 2)).write(to: silence)
        let measured = try await offThePool { try Loudness.measure([silence], timeout: .seconds(30)) }
        #expect(measured.integrated == nil && measured.peak == 0)

        let damaged = folder.appending("damaged.mp3")
        try Data(String(repeating: "not a sound, only words. ", count: 800).utf8).write(to: damaged)
        let good = try tone("good.wav", peak: 0.3)
        await #expect {
            try await offThePool { try Loudness.measure([good, damaged], timeout: .seconds(30)) }
        } throws: { error in
            guard case .failed(let message) = error as? MediaError else { return false }
            return message.contains(damaged.path)
        }

        let long = try await offThePool { [self] in try tone("long.wav", seconds: 120, peak: 0.3) }
        await #expect {
            try await offThePool { try Loudness.measure([long], timeout: .milliseconds(1)) }
        } throws: { error in
            guard case .failed(let message) = error as? MediaError else { return false }
            return message.contains("took longer")
        }
    }

    @Test("the media reader's child measures what this process measures")
    func inTheChild() async throws {
        let files = [try tone("a.wav", peak: 0.1), try tone("b.wav", peak: 0.2)]
        let here = try await offThePool { try Loudness.measure(files, timeout: .seconds(30)) }
        let reader = MediaReader(program: builtExecutable("lecternd").path, logger: Logger(label: "test"))
        let there = try await reader.measureLoudness(files, timeout: .seconds(30))
        #expect(reader.childrenStarted == 1)
        #expect(there == here)
        await #expect(throws: MediaError.self) {
            try await reader.measureLoudness([folder.appending("none.wav")], timeout: .seconds(30))
        }
        await reader.stop()
    }
}
