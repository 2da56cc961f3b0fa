// The store's document index rows (schema 9), run on the store's thread with its connection;
// Store::saveDocumentIndex and Store::loadDocumentIndex post them there.
#pragma once

#include "services/store.h"
#include "services/store_sql.h"

#include <variant>

namespace hearth::app::detail {

// All of `entries` in one transaction (one sync for a folder's thousand files), or none.
std::optional<SqlFailure> saveDocumentIndex(QSqlDatabase db, qint64 conversationId,
                                            const QList<DocumentIndexEntry>& entries);

std::variant<QList<DocumentIndexEntry>, SqlFailure> loadDocumentIndex(const QSqlDatabase& db,
                                                                      const QList<QByteArray>& keys,
                                                                      const QString& model, const QString& chunking,
                                                                      qint64 preferred);

} // namespace hearth::app::detail
