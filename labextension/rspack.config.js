// Module ids by order, not by a hash of each module's identifier: the container entry's
// identifier holds absolute paths, so hashed ids (and the remoteEntry file name) changed with
// the folder the extension was built in, and a clean checkout could never reproduce the
// prebuilt output that ships in the wheel.
module.exports = {
  optimization: { moduleIds: 'natural', chunkIds: 'natural' }
};
