import Foundation
import LecternCore
import Testing

/// What a listener reads in the player's refusals and figures: files and chapters counted from 1, times as m:ss.
@Suite struct ListenerUnitsTests {
    @Test func refusalsCountFromOneAndSayTimesAsAListenerReadsThem() async {
        await withHarness { h in
            await h.player.open(makeItems(3))
            await h.ready(.seconds(100))
            func jumpRefusal(_ file: Int, _ at: Duration) async -> String? {
                do { try await h.player.jump(toFile: file, at: at); return nil } catch { return "\(error)" }
            }
            #expect(await jumpRefusal(98, .zero) == "there is no file 99: 3 files, from 1")
            #expect(await jumpRefusal(1, .seconds(200)) == "file 2 is 1:40 long: 3:20 is past its end")
            #expect(await jumpRefusal(1, .microseconds(-1)) == "a position in a file counts from 0:00: it cannot be negative")
            do {
                try await h.player.goTo(chapter: 76)
                Issue.record("chapter 77 of 3 was accepted")
            } catch {
                #expect("\(error)" == "there is no chapter 77: 3 chapters, from 1")
            }
            #expect(await h.player.snapshot.currentIndex == 0, "nothing changed")
        }
    }

    @Test func clockTimes() {
        #expect(Duration.zero.clock == "0:00")
        #expect(Duration.seconds(5.9).clock == "0:05", "whole seconds, as a bookmark's default title shows them")
        #expect(Duration.seconds(200).clock == "3:20")
        #expect(Duration.seconds(3723).clock == "1:02:03")
        #expect((Duration.zero - .seconds(15)).clock == "-0:15")
    }

    @Test func aVolumeNoListenerCouldChooseIsNotKept() async throws {
        try await withHarness { h in
            await h.player.open(makeItems(1))
            try await h.player.setVolume(Double("2.2e-308")!)  // what an outside fuzzer set
            #expect(await h.player.snapshot.volume == 0)
            try await h.player.setVolume(11)
            #expect(await h.player.snapshot.volume == 10)
            try await h.player.setVolume(0.25)
            #expect(await h.player.snapshot.volume == 0.25)
            try await h.player.apply(PlaybackSettings(volume: 1e-9, rate: 1))
            #expect(await h.player.snapshot.volume == 0)
        }
    }
}
