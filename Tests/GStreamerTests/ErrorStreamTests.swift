import CGStreamer
import CGStreamerShims
import GStreamer
import Testing

/// Which stream an error belongs to decides what the player does with it: the current file failed (skip to the
/// next), or the next one that "about-to-finish" handed over did. playbin may take a finished stream's elements
/// out of its bin before the bus thread reads their error; the URI is noted as the error is posted
/// (`lectern_gst_bus_note_stream_uris`, a sync handler), while the element still sits in its stream's
/// uridecodebin.
@Suite("The stream an error came from")
struct ErrorStreamTests {
    /// A pipeline with a "uridecodebin" for `uri` holding an element that posts an error and is then taken out
    /// of it; returns what `lectern_gst_message_source_uri` says when the error is read afterwards.
    private static func streamOfAnErrorReadAfterItsElementLeft(uri: String, noted: Bool) throws -> String? {
        GStreamer.initialize()
        let pipeline = try #require(gst_pipeline_new("pipeline"))
        defer { gst_object_unref(pipeline) }
        let bus = try #require(gst_element_get_bus(pipeline))
        defer { gst_object_unref(bus) }
        if noted { lectern_gst_bus_note_stream_uris(UnsafeMutableRawPointer(bus)) }

        let stream = try #require(gst_element_factory_make("uridecodebin", "stream"))
        lectern_gst_set_object_arg(UnsafeMutableRawPointer(stream), "uri", uri)
        let demuxer = try #require(gst_element_factory_make("identity", "demuxer"))
        gst_object_ref(demuxer)  // kept while out of every bin
        defer { gst_object_unref(demuxer) }
        let bin = { (element: UnsafeMutablePointer<GstElement>) in
            UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstBin.self)
        }
        #expect(gst_bin_add(bin(pipeline), stream) != 0)
        #expect(gst_bin_add(bin(stream), demuxer) != 0)

        let error = g_error_new_literal(gst_stream_error_quark(), Int32(GST_STREAM_ERROR_DEMUX.rawValue), "broken")
        defer { g_error_free(error) }
        let source = UnsafeMutableRawPointer(demuxer).assumingMemoryBound(to: GstObject.self)
        #expect(gst_element_post_message(demuxer, gst_message_new_error(source, error, "a test")) != 0)
        #expect(gst_bin_remove(bin(stream), demuxer) != 0)  // as playbin takes a finished stream apart

        let message = try #require(gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))
        defer { gst_message_unref(message) }
        guard let found = lectern_gst_message_source_uri(UnsafeMutableRawPointer(message)) else { return nil }
        defer { g_free(found) }
        return String(cString: found)
    }

    @Test("an error read after its element left its stream still names the stream")
    func notedAsPosted() throws {
        let uri = "file:///books/truncated/2.ogg"
        #expect(try Self.streamOfAnErrorReadAfterItsElementLeft(uri: uri, noted: true) == uri)
        // Without the note, the element's parents no longer lead to it: what the engine saw before.
        #expect(try Self.streamOfAnErrorReadAfterItsElementLeft(uri: uri, noted: false) == nil)
    }
}
