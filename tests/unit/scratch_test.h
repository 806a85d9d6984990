// The base of test classes that write files: each file a test names lands in the class's
// own temporary folder, removed when the test program ends.
#pragma once

#include <QObject>
#include <QTemporaryDir>

#include <string>

class ScratchTest : public QObject {
 protected:
  std::string path(const char* name) const { return dir_.filePath(name).toStdString(); }
  QString scratch_file(const QString& name) const { return dir_.filePath(name); }

 private:
  QTemporaryDir dir_;
};
