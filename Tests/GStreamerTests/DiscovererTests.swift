import Foundation
import GStreamer
import Synchronization
import Testing
import TestSupport

@Suite("Discoverer")
struct DiscovererTests {
    let files: AudioFixtures

    init() async throws {
        files = try await AudioFixtures.shared()
    }

    @Test("durations of untagged files")
    func durations() async throws {
        #expect(isClose(try await discoverOffThePool(files.url(.ogg10s)).duration, to: .seconds(430.0 * 1024 / 44100), within: .milliseconds(100)))
        #expect(isClose(try await discoverOffThePool(files.url(.wav2s)).duration, to: .seconds(2), within: .milliseconds(100)))
        #expect(isClose(try await discoverOffThePool(files.url(.flac3s)).duration, to: .seconds(3), within: .milliseconds(100)))
        let info = try await discoverOffThePool(files.url(.ogg2sA))
        #expect(info.hasAudio)
        #expect(info.title == nil)
        #expect(info.artists.isEmpty)
        #expect(info.cover == nil)
    }

    @Test("tags of an MP3 and an M4B", arguments: [AudioFixtures.File.mp3Tagged, .m4bTagged])
    func tags(file: AudioFixtures.File) async throws {
        let info = try await discoverOffThePool(files.url(file))
        typealias Tags = AudioFixtures.Tags
        #expect(isClose(info.duration, to: file == .mp3Tagged ? .seconds(3) : .seconds(4), within: .milliseconds(100)))
        #expect(info.title == Tags.title)
        #expect(info.artists == [Tags.artist])
        #expect(info.album == Tags.album)
        #expect(info.albumArtist == Tags.albumArtist)
        #expect(info.genre == Tags.genre)
        #expect(info.trackNumber == Tags.track)
        #expect(info.discNumber == Tags.disc)
        #expect(info.hasAudio)
        #expect(info.cover == nil)
    }

    @Test("the embedded cover comes back byte for byte")
    func cover() async throws {
        let info = try await discoverOffThePool(files.url(.mp3WithCover))
        let png = try Data(contentsOf: files.url(.png))
        #expect(info.cover?.mimeType == "image/png")
        #expect(info.cover?.data == png)
        #expect(info.title == AudioFixtures.Tags.title)
    }

    @Test("one reader for many files, a failure among them, says of each what a reader of its own says")
    func oneReaderForMany() async throws {
        let sequence = [AudioFixtures.File.mp3Tagged, .ogg2sA, .mp3WithCover, .flac3s, .m4bTagged, .mp3Tagged, .text, .wav2s]
        // One reader for the sequence and a reader of its own for each file, on a thread that may block.
        let (shared, own) = try await offThePool { [files] in
            let reader = try Discoverer.Reader(timeout: .seconds(5))
            return (sequence.map { file in Result { try reader.discover(files.url(file)) } },
                    sequence.map { file in Result { try Discoverer.discover(files.url(file)) } })
        }
        for (file, (shared, own)) in zip(sequence, zip(shared, own)) where file != .text {
            #expect(try shared.get() == own.get(), "\(file)")
        }
        #expect(throws: MediaError.self) { try shared[sequence.firstIndex(of: .text)!].get() }
    }

    @Test("a text file and a picture are not audio", arguments: [AudioFixtures.File.text, .png])
    func notAudio(file: AudioFixtures.File) async {
        await #expect {
            try await discoverOffThePool(files.url(file))
        } throws: { error in
            guard case MediaError.notAudio(let message) = error else { return false }
            return message.contains(file.rawValue)
        }
    }

    @Test("a directory is not audio")
    func directory() async {
        await #expect {
            try await discoverOffThePool(files.directory)
        } throws: { error in
            if case MediaError.notAudio = error { true } else { false }
        }
    }

    @Test("a missing file is reported as not found, with its path")
    func missing() async {
        let url = files.directory.appendingPathComponent("no such file.ogg")
        await #expect(throws: MediaError.notFound("No such file: \(url.path)")) {
            try await discoverOffThePool(url)
        }
    }

    /// Read as `nobody` (``AsUser``): root, as the tests run in CI, reads any file.
    @Test("a file without read permission is unreadable")
    func unreadable() async throws {
        let url = files.scratchURL("locked.ogg")
        try FileManager.default.copyItem(at: files.url(.ogg2sA), to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: url.path)
        defer { try? FileManager.default.removeItem(at: url) }
        await #expect {
            try await offThePool { try AsUser.nobody { try Discoverer.discover(url) } }
        } throws: { error in
            if case MediaError.unreadable = error { true } else { false }
        }
    }

    @Test("discovery runs concurrently from several threads")
    func concurrent() async throws {
        let urls = [AudioFixtures.File.ogg10s, .wav2s, .flac3s, .mp3Tagged, .m4bTagged, .ogg2sB].map(files.url)
        // Blocking calls belong on threads that may block, not on the cooperative pool (concurrentPerform runs
        // iterations on its calling thread too).
        let durations = try await offThePool {
            let results = Mutex<[Int: Duration]>([:])
            DispatchQueue.concurrentPerform(iterations: urls.count) { index in
                if let duration = try? Discoverer.discover(urls[index]).duration {
                    results.withLock { $0[index] = duration }
                }
            }
            return results.withLock { $0 }
        }
        #expect(durations.count == urls.count)
        #expect(isClose(durations[0], to: .seconds(430.0 * 1024 / 44100), within: .milliseconds(100)))
        #expect(isClose(durations[4], to: .seconds(4), within: .milliseconds(100)))
    }
}
