import Foundation
import LecternCore
import Testing

/// A book's loudness gain reaches the engine with the book, follows a measurement made while it plays, and goes
/// with it: files opened otherwise play at unity gain.
@Suite struct LoudnessGainTests {
    func gains(_ calls: [FakeEngine.Call]) -> [Double] {
        calls.compactMap { if case .setGain(let gain) = $0 { gain } else { nil } }
    }

    @Test func theGainGoesWithTheBook() async throws {
        try await withHarness { h in
            // Unity: the engine is not told anything.
            await h.player.open(makeItems(2), settings: PlaybackSettings(volume: 1.5))
            #expect(gains(h.engine.calls) == [])
            // A normalised book, before it is loaded; then its measurement changes while it plays.
            await h.player.open(makeItems(2), settings: PlaybackSettings(gain: 0.5))
            await h.player.setLoudnessGain(2)
            await h.player.setLoudnessGain(2)
            #expect(gains(h.engine.calls) == [0.5, 2])
            // Settings applied again keep what they say; files opened without settings play at unity.
            try await h.player.apply(PlaybackSettings(volume: 1, gain: 2))
            await h.player.open(makeItems(1))
            await h.player.setLoudnessGain(.nan)
            #expect(gains(h.engine.calls) == [0.5, 2, 1])
            #expect(await h.player.snapshot.volume == 1, "the volume is the listener's, not the gain")
        }
    }

    @Test func theCompressorGoesWithTheBook() async throws {
        try await withHarness { h in
            func compressors() -> [Double?] {
                h.engine.calls.compactMap { call -> Double?? in
                    if case .setCompressor(let level) = call { return .some(level) } else { return nil }
                }
            }
            // Off: the engine is not told anything.
            await h.player.open(makeItems(2), settings: PlaybackSettings(volume: 1.5))
            #expect(compressors().isEmpty)
            // On with the book; the level follows a new target; settings applied again keep it; files opened
            // without settings play without it.
            await h.player.open(makeItems(2), settings: PlaybackSettings(compressor: -18))
            await h.player.setCompressor(-23)
            try await h.player.apply(PlaybackSettings(volume: 1, compressor: -23))
            await h.player.open(makeItems(1))
            await h.player.setCompressor(.nan)
            #expect(compressors() == [-18, -23, nil])
        }
    }
}
