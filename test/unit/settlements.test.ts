/**
 * The settlement report's pure parts and the reconciliation: the operators' statement formats
 * (M-PESA's organisation statement, MTN MoMo's transaction export), the diff against our lines,
 * exact totals.
 */
import { describe, expect, test } from 'bun:test';
import { UnreadableCsvError } from '../../src/domain/csv';
import { asId } from '../../src/domain/ids';
import { differenceOf, sumAmounts } from '../../src/domain/money';
import { readOperatorStatement, statementFormatOf } from '../../src/domain/operator-statements';
import { reconcile } from '../../src/domain/reconciliation';
import { settlementCsv, settlementTotals, type SettlementLine } from '../../src/domain/settlements';

const DAY = new Date('2025-05-01T00:00:00Z');

function line(overrides: Partial<SettlementLine>): SettlementLine {
  return {
    network: 'Safaricom',
    currency: 'KES',
    type: 'collection',
    id: 1,
    organizationId: asId('Organization', 7),
    operatorTransactionId: 'QAB0000001',
    reference: null,
    originalTransactionId: null,
    route: null,
    amount: '100.0000',
    phoneNumber: '+254711000001',
    finalAt: new Date('2025-05-01T10:00:00Z'),
    ...overrides,
  };
}

const MPESA_HEADER =
  'Receipt No.,Completion Time,Initiation Time,Details,Transaction Status,Paid In,Withdrawn,Balance,Balance Confirmed,Reason Type,Other Party Info,Linked Transaction ID,A/C No.';

/** An M-PESA statement as the portal exports it: a few descriptive lines, then the header and the lines, CRLF, with a BOM. */
function mpesaStatement(rows: string[]): string {
  return `\uFEFFOrganisation Name:,Example Shop Ltd\r\nShortcode:,600000\r\nTime Period:,"01-05-2025 to 02-05-2025"\r\n\r\n${MPESA_HEADER}\r\n${rows.join('\r\n')}\r\n`;
}

const MOMO_HEADER =
  'Id,External Transaction Id,Date,Status,Type,Provider Category,Information,Note/Message,From,From Name,To,To Name,Initiated By,On Behalf Of,' +
  'Amount,Currency,Fee,Currency,Discount,Currency,Promotion,Currency,Coupon,Currency,Balance,Currency';

const momoRow = (
  id: string,
  external: string,
  date: string,
  status: string,
  amount: string,
  fee = '0',
  feeCurrency = 'UGX',
) =>
  `${id},${external},${date},${status},TRANSFER,,,Payment,FRI:600000/MM,Shop,FRI:256772000001/MSISDN,Jane,,,${amount},UGX,${fee},${feeCurrency},0,UGX,0,UGX,0,UGX,"1,000,000",UGX`;

describe('M-PESA organisation statement', () => {
  test('descriptive lines before the header, BOM, CRLF, thousands separators, charges as fees of their receipt', () => {
    const lines = readOperatorStatement(
      'mpesa',
      mpesaStatement([
        'QAB0000001,2025-05-01 13:00:00,2025-05-01 12:59:58,Pay Bill from 254711000001,Completed,"1,250.00",,"10,000.00",true,Pay Bill,254711000001 - JANE DOE,,INV1',
        'QAB0000002,01-05-2025 14:00:00,,Business Payment to 254711000002,Completed,,"-2,000.50","8,000.00",true,Business Payment,254711000002 - JOHN,,',
        'QAB0000003,2025-05-01 14:00:01,,Business Payment Charge,Completed,,-22.40,"7,977.60",true,Business Payment Charge,,QAB0000002,',
        '"QAB0000004","2025-05-01 15:00:00",,"Pay Bill Online",Failed,500.00,,,false,Pay Bill Online,254711000003 - X,,',
      ]),
    );
    expect(
      lines.map(({ row, operatorId, amount, direction, completed, charge, linkedId }) => ({
        row,
        operatorId,
        amount,
        direction,
        completed,
        charge,
        linkedId,
      })),
    ).toEqual([
      {
        row: 6,
        operatorId: 'QAB0000001',
        amount: '1250.0000',
        direction: 'in',
        completed: true,
        charge: false,
        linkedId: null,
      },
      {
        row: 7,
        operatorId: 'QAB0000002',
        amount: '2000.5000',
        direction: 'out',
        completed: true,
        charge: false,
        linkedId: null,
      },
      {
        row: 8,
        operatorId: 'QAB0000003',
        amount: '22.4000',
        direction: 'out',
        completed: true,
        charge: true,
        linkedId: 'QAB0000002',
      },
      {
        row: 9,
        operatorId: 'QAB0000004',
        amount: '500.0000',
        direction: 'in',
        completed: false,
        charge: false,
        linkedId: null,
      },
    ]);
    // East Africa Time, whichever way round the day is written.
    expect(lines[0]!.time).toEqual(new Date('2025-05-01T10:00:00Z'));
    expect(lines[1]!.time).toEqual(new Date('2025-05-01T11:00:00Z'));
    expect(lines[0]!.party).toBe('254711000001 - JANE DOE');
  });

  test('a file without the header row, or without a required column, is refused with what is missing', () => {
    expect(() => readOperatorStatement('mpesa', 'a,b\n1,2\n')).toThrow('no header row names the column "receipt no"');
    expect(() =>
      readOperatorStatement('mpesa', 'Receipt No.,Completion Time,Paid In\nX,2025-05-01 10:00:00,1\n'),
    ).toThrow('lacks the columns "transaction status", "withdrawn"');
    expect(() => readOperatorStatement('mpesa', '')).toThrow(UnreadableCsvError);
    expect(() =>
      readOperatorStatement('mpesa', mpesaStatement(['QAB1,2025-05-01 10:00:00,,x,Completed,12x,,,,,,,'])),
    ).toThrow('line 6, Paid In: "12x" is not an amount');
    expect(() => readOperatorStatement('mpesa', mpesaStatement(['QAB1,yesterday,,x,Completed,12,,,,,,,']))).toThrow(
      'line 6, Completion Time: "yesterday" is not a time',
    );
  });
});

describe('MTN MoMo transaction export', () => {
  test("the repeated Currency headers are read by position: the amount's and the fee's", () => {
    const lines = readOperatorStatement(
      'momo',
      [
        MOMO_HEADER,
        momoRow('7001', 'pay-91', '2025-05-01 09:00:00', 'Successful', '"-15,000"', '250', 'UGX'),
        momoRow('7002', 'req-12-0', '2025-05-01T08:30:00Z', 'SUCCESSFUL', '5000'),
        momoRow('7003', '', '2025-05-01 10:00:00', 'Pending', '700'),
      ].join('\n'),
    );
    expect(
      lines.map(({ operatorId, reference, amount, currency, fee, completed, direction }) => ({
        operatorId,
        reference,
        amount,
        currency,
        fee,
        completed,
        direction,
      })),
    ).toEqual([
      {
        operatorId: '7001',
        reference: 'pay-91',
        amount: '15000.0000',
        currency: 'UGX',
        fee: { amount: '250.0000', currency: 'UGX' },
        completed: true,
        direction: 'out',
      },
      {
        operatorId: '7002',
        reference: 'req-12-0',
        amount: '5000.0000',
        currency: 'UGX',
        fee: null,
        completed: true,
        direction: null,
      },
      {
        operatorId: '7003',
        reference: null,
        amount: '700.0000',
        currency: 'UGX',
        fee: null,
        completed: false,
        direction: null,
      },
    ]);
    expect(lines[0]!.time).toEqual(new Date('2025-05-01T06:00:00Z'));
    expect(lines[1]!.time).toEqual(new Date('2025-05-01T08:30:00Z'));
  });

  test('a missing required column or an unreadable file is refused', () => {
    expect(() =>
      readOperatorStatement('momo', 'Id,External Transaction Id,Date,Status\n1,,2025-05-01,Successful\n'),
    ).toThrow('lacks the column "amount"');
    expect(() => readOperatorStatement('momo', `${MOMO_HEADER}\n"unterminated,quote`)).toThrow(UnreadableCsvError);
  });

  test('each connected network has its statement format; others have none', () => {
    expect([
      statementFormatOf('Safaricom'),
      statementFormatOf('MTN Uganda'),
      statementFormatOf('Airtel Uganda'),
    ]).toEqual(['mpesa', 'momo', null]);
  });
});

describe('reconciliation', () => {
  const collection = line({ id: 1, operatorTransactionId: 'QAB0000001', amount: '1250.0000' });
  const payment = line({
    type: 'payment',
    id: 91,
    operatorTransactionId: 'QAB0000002',
    reference: 'pay-91',
    amount: '2000.5000',
  });
  const reversal = line({
    type: 'reversal',
    id: 5,
    operatorTransactionId: 'QAB0000009',
    reference: 'rev-5',
    originalTransactionId: 'QAB0000008',
    amount: '40.0000',
  });

  test("a statement that agrees: everything matched, the charge reported as the payment's fee", () => {
    const statement = readOperatorStatement(
      'mpesa',
      mpesaStatement([
        'QAB0000001,2025-05-01 13:00:00,,Pay Bill,Completed,"1,250.00",,,,Pay Bill,,,',
        'QAB0000002,2025-05-01 14:00:00,,Business Payment,Completed,,"2,000.50",,,Business Payment,,,',
        'QAB0000003,2025-05-01 14:00:01,,Charge,Completed,,22.40,,,Business Payment Charge,,QAB0000002,',
        'QAB0000004,2025-05-01 14:00:01,,Charge,Completed,,1.60,,,Business Payment Charge,,QAB0000002,',
        'QAB0000009,2025-05-01 15:00:00,,Reversal,Completed,,40.00,,,Reversal,,QAB0000008,',
        'QAB0000010,2025-05-01 16:00:00,,Pay Bill Online,Cancelled,70.00,,,,Pay Bill Online,,,',
      ]),
    );
    const found = reconcile(DAY, [collection, payment, reversal], [], statement);
    expect(found).toMatchObject({
      differs: false,
      matched: 3,
      notCompleted: 1,
      missingOnOurSide: [],
      missingOnOperatorSide: [],
      amountMismatches: [],
      statusMismatches: [],
      fees: [{ operatorId: 'QAB0000002', amount: '24.0000', currency: 'KES', ours: { type: 'payment', id: 91 } }],
    });
  });

  test('missing on either side, amount and status mismatches, a reversal matched by its linked receipt', () => {
    const statement = readOperatorStatement(
      'mpesa',
      mpesaStatement([
        'QAB0000001,2025-05-01 13:00:00,,Pay Bill,Completed,"1,205.00",,,,Pay Bill,,,',
        'QAB0000002,2025-05-01 14:00:00,,Business Payment,Failed,,"2,000.50",,,Business Payment,,,',
        'QRR0000001,2025-05-01 15:00:00,,Reversal,Completed,,40.00,,,Reversal,,QAB0000008,',
        'QAB0000077,2025-05-01 16:00:00,,Pay Bill,Completed,300.00,,,,Pay Bill,,,',
      ]),
    );
    const extra = line({ id: 2, operatorTransactionId: 'QAB0000055', amount: '10.0000' });
    const found = reconcile(DAY, [collection, payment, reversal, extra], [], statement);
    expect(found.differs).toBe(true);
    expect(found.matched).toBe(1);
    expect(found.amountMismatches.map(({ ours, theirs }) => [ours.id, ours.amount, theirs.amount])).toEqual([
      [1, '1250.0000', '1205.0000'],
    ]);
    expect(found.statusMismatches.map(({ ours, theirs }) => [ours.type, ours.id, theirs.status])).toEqual([
      ['payment', 91, 'Failed'],
    ]);
    expect(found.missingOnOurSide.map((theirs) => [theirs.operatorId, theirs.amount])).toEqual([
      ['QAB0000077', '300.0000'],
    ]);
    expect(found.missingOnOperatorSide.map((ours) => ours.id)).toEqual([2]);
  });

  test('MoMo lines match by our reference when the operator id differs; a neighbouring day is information, not a difference', () => {
    const momoPayment = line({
      network: 'MTN Uganda',
      currency: 'UGX',
      type: 'payment',
      id: 91,
      operatorTransactionId: '3f0c-uuid',
      reference: 'pay-91',
      amount: '15000.0000',
    });
    const lastNight = line({
      network: 'MTN Uganda',
      currency: 'UGX',
      id: 3,
      operatorTransactionId: '7005',
      amount: '900.0000',
      finalAt: new Date('2025-04-30T23:59:59Z'),
    });
    const statement = readOperatorStatement(
      'momo',
      [
        MOMO_HEADER,
        momoRow('7001', 'pay-91', '2025-05-01 09:00:00', 'Successful', '-15000', '250'),
        // 00:00:02 East Africa Time on 1 May is 21:00:02 UTC on 30 April: another day's, and none of ours.
        momoRow('7004', '', '2025-05-01 00:00:02', 'Successful', '100'),
        // Ours became final at 23:59:59 UTC on 30 April; MoMo's clock says six seconds later, on the 1st.
        momoRow('7005', '', '2025-05-01 03:00:05', 'Successful', '900'),
        momoRow('7006', 'req-1-0', '2025-05-01 12:00:00', 'Successful', '75', '0', 'UGX').replace(
          ',UGX,0,UGX,0',
          ',EUR,0,UGX,0',
        ),
      ].join('\n'),
    );
    const euro = line({
      network: 'MTN Uganda',
      currency: 'UGX',
      id: 4,
      operatorTransactionId: '7006',
      amount: '75.0000',
    });
    const found = reconcile(DAY, [momoPayment, euro], [lastNight], statement);
    expect(found.matched).toBe(1);
    expect(found.onAnotherDay.map(({ ours }) => ours.id)).toEqual([3]);
    expect(found.outsideDay.map((theirs) => theirs.operatorId)).toEqual(['7004']);
    // The same amount in another currency is not the same amount.
    expect(found.amountMismatches.map(({ ours, theirs }) => [ours.id, theirs.currency])).toEqual([[4, 'EUR']]);
    expect(found.fees).toEqual([
      { operatorId: '7001', amount: '250.0000', currency: 'UGX', ours: { type: 'payment', id: 91 } },
    ]);
  });
});

describe('settlement totals and CSV', () => {
  test('exact sums per network and currency, net may be negative; CSV lines then totals, formulas escaped', () => {
    const lines = [
      line({ id: 1, amount: '0.1000' }),
      line({ id: 2, amount: '0.2000' }),
      line({ type: 'payment', id: 3, amount: '1.0000', reference: 'pay-3' }),
      line({
        network: 'MTN Uganda',
        currency: 'UGX',
        type: 'reversal',
        id: 4,
        amount: '5.0000',
        operatorTransactionId: '=HYPERLINK("x")',
      }),
    ];
    expect(settlementTotals(lines)).toEqual([
      {
        network: 'Safaricom',
        currency: 'KES',
        in: { count: 2, amount: '0.3000' },
        out: { count: 1, amount: '1.0000' },
        reversed: { count: 0, amount: '0.0000' },
        net: '-0.7000',
      },
      {
        network: 'MTN Uganda',
        currency: 'UGX',
        in: { count: 0, amount: '0.0000' },
        out: { count: 0, amount: '0.0000' },
        reversed: { count: 1, amount: '5.0000' },
        net: '-5.0000',
      },
    ]);
    const csv = settlementCsv({ day: DAY, since: DAY, until: DAY, asOf: DAY, network: null, currency: null, lines })
      .trim()
      .split('\n');
    expect(csv[0]).toBe(
      'network,currency,type,id,organization,operator_transaction_id,reference,original_transaction_id,route,amount,fee,phonenumber,final_at,count',
    );
    expect(csv[4]).toContain(`'=HYPERLINK(""x"")`);
    expect(csv.slice(5)).toEqual([
      'Safaricom,KES,total_in,,,,,,,0.3000,,,,2',
      'Safaricom,KES,total_out,,,,,,,1.0000,,,,1',
      'Safaricom,KES,total_reversed,,,,,,,0.0000,,,,0',
      'Safaricom,KES,net,,,,,,,-0.7000,,,,',
      'MTN Uganda,UGX,total_in,,,,,,,0.0000,,,,0',
      'MTN Uganda,UGX,total_out,,,,,,,0.0000,,,,0',
      'MTN Uganda,UGX,total_reversed,,,,,,,5.0000,,,,1',
      'MTN Uganda,UGX,net,,,,,,,-5.0000,,,,',
    ]);
  });

  test('decimal arithmetic without floats', () => {
    expect(sumAmounts(['0.1', '0.2'])).toBe('0.3000');
    expect(differenceOf('10', '0.0001')).toBe('9.9999');
    expect(differenceOf('0.5', '1', '0.25')).toBe('-0.7500');
    expect(differenceOf('-1.5', '-2')).toBe('0.5000');
  });
});
