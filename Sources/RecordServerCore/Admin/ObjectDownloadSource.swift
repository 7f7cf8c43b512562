import Foundation
import Hummingbird
import NIOCore
import ObjectStorage

/// A recording served from the object store (its local copy removed by `keepLocalCopy: false`,
/// or lost): the same headers and ranges as from disk (``RecordingDownload``), each range read
/// with a ranged GET and streamed through as it arrives. The validators are the upload's: its
/// size, the store's ETag (which changes with any byte) and when it was uploaded.
struct ObjectDownloadSource: RecordingDownloadSource {
    let store: RecordingObjectStore
    let upload: UploadRecord

    func validators() async throws -> RecordingDownload.Validators {
        RecordingDownload.Validators(size: upload.sizeBytes, eTag: "\"s3-\(upload.etag)\"",
                                     lastModified: Date(timeIntervalSince1970: upload.uploadedAt.timeIntervalSince1970.rounded(.down)))
    }

    func body(_ ranges: [ClosedRange<Int64>], validators: RecordingDownload.Validators, parts: MultipartByteRanges?) -> ResponseBody {
        let client = store.client, key = store.relativeKey(upload.objectKey), expectedETag = upload.etag
        let length = parts?.totalLength ?? ranges.reduce(0) { $0 + $1.count }
        return ResponseBody(contentLength: length) { writer in
            for (index, range) in ranges.enumerated() {
                if let parts { try await writer.write(ByteBuffer(string: parts.header(forPart: index))) }
                let stream = try await client.getObjectStream(key: key, range: .bytes(range))
                // Another object under the key since the headers went out: end short rather than mix two.
                guard stream.info.etag == expectedETag, stream.info.size == Int64(range.count) else {
                    throw RecordingDownloadError("object \(key) is not the uploaded one (ETag \(stream.info.etag), expected \(expectedETag))")
                }
                var sent: Int64 = 0
                for try await chunk in stream.body {
                    sent += Int64(chunk.readableBytes)
                    try await writer.write(chunk)
                }
                guard sent == Int64(range.count) else { throw RecordingDownloadError("object \(key) ended early at \(sent) of \(range.count) bytes") }
            }
            if let parts { try await writer.write(ByteBuffer(string: parts.closing)) }
            try await writer.finish(nil)
        }
    }
}
